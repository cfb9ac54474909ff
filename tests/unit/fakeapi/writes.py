"""Writes on the fake API server: create, update, the patches, delete, and the garbage
collector's pass. Tests only (``server.py`` says what is modelled).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from tests.unit.fakeapi import errors, patches
from tests.unit.fakeapi.resources import Resource, Target
from trainweave import k8s_names
from trainweave.integrations.views.read.times import format_time

if TYPE_CHECKING:
    from tests.unit.fakeapi.server import FakeApi

Json = dict[str, Any]
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
FOREGROUND, ORPHAN = "foregroundDeletion", "orphan"
# metadata the server owns: a write cannot change it
SERVER_META = ("uid", "creationTimestamp", "deletionTimestamp", "generation", "resourceVersion")


def _labels_invalid(meta: Json) -> list[tuple[str, str]]:
    out = []
    for key, value in (meta.get("labels") or {}).items():
        if not k8s_names.QUALIFIED_NAME.match(str(key)) or len(str(key).rpartition("/")[2]) > 63:
            out.append((f"metadata.labels[{key}]", "a qualified name is required"))
        if not isinstance(value, str) or (
            value
            and not (
                len(value) <= 63 and k8s_names.QUALIFIED_NAME.match(value) and "/" not in value
            )
        ):
            out.append((f"metadata.labels[{key}]", f"Invalid value: {value!r}"))
    return out


def _decodable(obj: Json) -> None:
    """400, as the server's decoder answers, for metadata of the wrong JSON types."""
    meta = obj.get("metadata")
    maps = ("labels", "annotations")
    ok = isinstance(meta, dict) and all(
        isinstance(meta.get(f) or {}, dict)
        and all(isinstance(v, str) for v in (meta.get(f) or {}).values())
        for f in maps
    )
    ok = ok and isinstance(meta.get("finalizers") or [], list) if isinstance(meta, dict) else False
    refs = (meta or {}).get("ownerReferences") or []
    ok = ok and isinstance(refs, list) and all(isinstance(r, dict) for r in refs)
    ok = ok and isinstance((meta or {}).get("name", ""), str)
    if not ok:
        raise errors.bad_request("unable to decode the object's metadata")


def _spec_of(obj: Json) -> Json:
    """What a generation counts: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class Writer:
    """The writes of one request on one target."""

    def __init__(self, api: FakeApi, t: Target, dry: bool) -> None:
        self.api, self.t, self.res, self.dry = api, t, t.resource, dry
        self.store = api.store

    # --- checks ---------------------------------------------------------------------------
    def _validate(self, obj: Json) -> None:
        _decodable(obj)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        causes: list[tuple[str, str]] = []
        valid = (
            k8s_names.DNS1035_LABEL.match(name) and len(name) <= 63
            if self.res.kind.kind == "Service"
            else k8s_names.is_dns1123_subdomain(name)
        )
        if not valid:
            causes.append(("metadata.name", f"Invalid value: {name!r}: a lowercase RFC 1123 name"))
        causes += _labels_invalid(meta)
        check = self.api.validators.get(self.res.kind.kind)
        if check is not None:
            causes += check(obj)
        if causes:
            raise errors.invalid(self.res, name, causes)

    def _live(self) -> Json:
        found = self.store.get(self.res, (self.t.namespace, self.t.name))
        if found is None:
            raise errors.not_found(self.res, self.t.name)
        return found

    # --- create ----------------------------------------------------------------------------
    def create(self, body: Json, seeded: bool = False) -> Json:
        """POST: a new object (409 if the name is taken); ``seeded``: state another server
        left (``FakeApi.seed``), its status, uid and creation time kept."""
        kind = self.res.kind
        if body.get("kind") != kind.kind or body.get("apiVersion") != kind.api_version:
            raise errors.bad_request(
                f"the object is a {body.get('apiVersion')}/{body.get('kind')}, not a {kind.api_version}/{kind.kind}"
            )
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        ns = self.t.namespace
        if kind.namespaced and meta.get("namespace") not in (None, "", ns):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{self.store.new_uid()[-5:]}"
        kept = {
            k: meta[k]
            for k in ("uid", "creationTimestamp", "deletionTimestamp")
            if seeded and meta.get(k)
        }
        for key in (*SERVER_META, "managedFields"):
            meta.pop(key, None)
        if kind.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if self.res.status and not seeded:
            obj.pop("status", None)
        self._validate(obj)
        meta.update(
            uid=self.store.new_uid(), creationTimestamp=format_time(self.api.now()), generation=1
        )
        meta.update(kept)
        with self.store.cond:
            if (ns, meta["name"]) in self.store.of(self.res):
                raise errors.already_exists(self.res, meta["name"])
            if self.dry:
                return obj
            return self.store.commit(self.res, "ADDED", obj, None)

    # --- update ----------------------------------------------------------------------------
    def update(self, body: Json) -> Json:
        """PUT: the whole object, on its resourceVersion when it gives one."""
        name = (body.get("metadata") or {}).get("name")
        if name != self.t.name:
            raise errors.bad_request(
                f"the name of the object ({name}) does not match the name on the URL ({self.t.name})"
            )
        with self.store.cond:
            return self._write(copy.deepcopy(body), self._live())

    def patch(self, patch: Any, content_type: str) -> Json:
        """PATCH: merge, strategic (built-in kinds only) or JSON patch."""
        with self.store.cond:
            live = self._live()
            try:
                if content_type == MERGE and isinstance(patch, dict):
                    new = patches.merge(live, patch)
                elif content_type == STRATEGIC and self.res.builtin and isinstance(patch, dict):
                    new = patches.strategic(live, patch)
                elif content_type == JSON_PATCH and isinstance(patch, list):
                    new = patches.json_patch(live, patch)
                elif content_type in (MERGE, STRATEGIC, JSON_PATCH) and not (
                    content_type == STRATEGIC and not self.res.builtin
                ):
                    raise errors.bad_request(f"a {content_type} body of the wrong shape")
                else:
                    raise errors.unsupported_media(content_type)
            except patches.PatchError as err:
                raise errors.Failure(422, "Invalid", str(err)) from None
            given = (patch.get("metadata") or {}) if isinstance(patch, dict) else {}
            if "resourceVersion" not in given:
                new.setdefault("metadata", {})["resourceVersion"] = live["metadata"].get(
                    "resourceVersion"
                )
            return self._write(new, live)

    def apply(self, config: Json, manager: str, force: bool) -> Json:
        """Server-side apply by ``manager`` (``patches.apply``); creates a missing object."""
        key = (self.res, (self.t.namespace, self.t.name))
        with self.store.cond:
            live = self.store.get(self.res, key[1])
            if live is None:
                if self.t.sub:
                    raise errors.not_found(self.res, self.t.name)
                created = self.create(config)
                if not self.dry:
                    self.store.managers[key] = {manager: patches.owned_paths(config)}
                return created
            if self.t.sub == "status":
                config = {"status": config.get("status") or {}}
            else:
                config = {k: v for k, v in config.items() if k != "status" or not self.res.status}
            config.pop("apiVersion", None)
            config.pop("kind", None)
            meta = config.get("metadata") or {}
            config["metadata"] = {
                k: v
                for k, v in meta.items()
                if k in ("labels", "annotations", "finalizers", "ownerReferences")
            }
            if not config["metadata"]:
                del config["metadata"]
            owners = self.store.managers.get(key, {})
            new, after, conflicts = patches.apply(live, config, manager, owners, force)
            if conflicts:
                fields = ", ".join("." + ".".join(p) for p in conflicts)
                raise errors.conflict(
                    self.res, self.t.name, f"Apply failed with conflicts: {fields}"
                )
            new["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            out = self._write(new, live, managed=False)
            if not self.dry:
                self.store.managers[key] = after
            return out

    def _write(self, new: Json, live: Json, managed: bool = True) -> Json:
        """Store ``new`` over ``live`` (under ``store.cond``): its resourceVersion, if given,
        must be the live one; only the status of a status write, never the status of an
        object write when there is a subresource; no new finalizers once deleting; the last
        finalizer gone of an object being deleted deletes it."""
        meta = new.setdefault("metadata", {})
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and rv != live["metadata"]["resourceVersion"]:
            raise errors.conflict(
                self.res,
                self.t.name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        if self.t.sub == "status":
            new = {**copy.deepcopy(live), "status": new.get("status")}
            if new["status"] is None:
                del new["status"]
        elif self.res.status:
            new.pop("status", None)
            if "status" in live:
                new["status"] = copy.deepcopy(live["status"])
        meta = new.setdefault("metadata", {})
        for key in ("apiVersion", "kind"):
            new[key] = live[key]
        for key in (*SERVER_META, "name", "namespace"):
            if key in live["metadata"]:
                meta[key] = live["metadata"][key]
            else:
                meta.pop(key, None)
        meta.pop("managedFields", None)
        deleting = bool(live["metadata"].get("deletionTimestamp"))
        if deleting and set(meta.get("finalizers") or []) - set(
            live["metadata"].get("finalizers") or []
        ):
            raise errors.invalid(
                self.res,
                self.t.name,
                [
                    (
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted",
                    )
                ],
            )
        self._validate(new)
        if _spec_of(new) != _spec_of(live):
            meta["generation"] = int(live["metadata"].get("generation") or 1) + 1
        if new == live:
            return live  # nothing changed: no new resourceVersion, no event
        if managed:
            self._drop_changed(new, live)
        if self.dry:
            return new
        if deleting and not meta.get("finalizers"):
            return self.store.commit(self.res, "DELETED", new, live)
        return self.store.commit(self.res, "MODIFIED", new, live)

    def _drop_changed(self, new: Json, live: Json) -> None:
        """A field another write changed is no longer its appliers' (server-side apply)."""
        key = (self.res, (self.t.namespace, self.t.name))
        for paths in self.store.managers.get(key, {}).values():
            for path in list(paths):
                if patches.get_path(new, path) != patches.get_path(live, path):
                    paths.discard(path)

    # --- delete ----------------------------------------------------------------------------
    def delete(self, options: Json) -> Json:
        """DELETE with DeleteOptions: preconditions, propagationPolicy, finalizers."""
        with self.store.cond:
            live = self._live()
            pre = options.get("preconditions") or {}
            meta = live["metadata"]
            for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                want = pre.get(field)
                if want not in (None, "") and want != meta.get(field):
                    raise errors.conflict(
                        self.res,
                        self.t.name,
                        f"Precondition failed: {label} in precondition: {want}, {label} in object meta: {meta.get(field)}",
                    )
            policy = options.get("propagationPolicy") or (
                "Orphan" if options.get("orphanDependents") else ""
            )
            finalizers = list(meta.get("finalizers") or [])
            extra = {"Foreground": FOREGROUND, "Orphan": ORPHAN}.get(policy)
            if extra and extra not in finalizers and not meta.get("deletionTimestamp"):
                finalizers.append(extra)
            if not finalizers:
                if self.dry:
                    return live
                last = self.store.commit(self.res, "DELETED", live, live)
                if self.res.returns_deleted:
                    return last
                details = {
                    "name": self.t.name,
                    "group": self.res.kind.group,
                    "kind": self.res.kind.plural,
                    "uid": meta.get("uid"),
                }
                return {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            if meta.get("deletionTimestamp") and finalizers == meta.get("finalizers"):
                return live
            new = copy.deepcopy(live)
            new["metadata"]["finalizers"] = finalizers
            new["metadata"].setdefault("deletionTimestamp", format_time(self.api.now()))
            new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
            if self.dry:
                return new
            return self.store.commit(self.res, "MODIFIED", new, live)


def _dependents(api: FakeApi, uid: str) -> list[tuple[Resource, Json]]:
    return [
        (res, obj)
        for res, objs in api.store.objects.items()
        for obj in objs.values()
        if any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])
    ]


def collect(api: FakeApi) -> int:
    """One pass of the garbage collector: dependents of an owner that is gone are deleted in
    the background; an owner deleted in the foreground has its dependents deleted and loses its
    ``foregroundDeletion`` finalizer once none is left; one deleted with ``orphan`` has its
    dependents' ownerReferences to it removed and loses that finalizer. The count of writes."""
    done = 0
    with api.store.cond:
        live_uids = {
            o["metadata"]["uid"] for objs in api.store.objects.values() for o in objs.values()
        }
        everything = [(r, o) for r, objs in api.store.objects.items() for o in list(objs.values())]
    for res, obj in everything:
        meta = obj["metadata"]
        t = Target(res, str(meta.get("namespace") or ""), str(meta["name"]))
        owners = [r.get("uid") for r in meta.get("ownerReferences") or []]
        if owners and not any(u in live_uids for u in owners) and not meta.get("deletionTimestamp"):
            Writer(api, t, False).delete({"propagationPolicy": "Background"})
            done += 1
            continue
        finalizers = list(meta.get("finalizers") or [])
        if not meta.get("deletionTimestamp"):
            continue
        if FOREGROUND in finalizers:
            deps = _dependents(api, meta["uid"])
            for dres, dep in deps:
                if not dep["metadata"].get("deletionTimestamp"):
                    dmeta = dep["metadata"]
                    Writer(
                        api, Target(dres, str(dmeta.get("namespace") or ""), dmeta["name"]), False
                    ).delete({"propagationPolicy": "Foreground"})
                    done += 1
            if not _dependents(api, meta["uid"]):
                _unfinalize(api, t, FOREGROUND)
                done += 1
        if ORPHAN in finalizers:
            for dres, dep in _dependents(api, meta["uid"]):
                dmeta = dep["metadata"]
                refs = [r for r in dmeta["ownerReferences"] if r.get("uid") != meta["uid"]]
                dt = Target(dres, str(dmeta.get("namespace") or ""), dmeta["name"])
                Writer(api, dt, False).patch({"metadata": {"ownerReferences": refs or None}}, MERGE)
                done += 1
            _unfinalize(api, t, ORPHAN)
            done += 1
    return done


def _unfinalize(api: FakeApi, t: Target, finalizer: str) -> None:
    live = api.store.get(t.resource, (t.namespace, t.name))
    if live is None:
        return
    left = [f for f in live["metadata"].get("finalizers") or [] if f != finalizer]
    Writer(api, t, False).patch({"metadata": {"finalizers": left or None}}, MERGE)
