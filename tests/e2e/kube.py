"""Generic helpers for the e2e tier: kubeconfig, namespaces, custom objects, waiting.

Synchronisation is always "poll a condition with a deadline" (`wait_until`), never a bare sleep.
A wait retries only what is transient (``transient``): an error the API server gives while an
object is being created, moved or restarted; anything else (403, 422, a bug in the test) ends it
at once, so a red run is short. A wait for something to go away counts 404 as gone (``gone``).
"""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import urllib3
import yaml
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

T = TypeVar("T")
# The generated models (kubernetes 37) type every field Optional, though an object read back from
# the API server always has its metadata, and a pod its spec and status: the tests read such
# objects untyped, as they read the custom objects' dicts.
Pod = Any
MANIFESTS = Path(__file__).parent / "manifests"
E2E_NAMESPACE_LABEL = "trainweave.test/e2e"

KUEUE = ("kueue.x-k8s.io", "v1beta2")
ARGO = ("argoproj.io", "v1alpha1")


def default_kubeconfig() -> Path:
    """TRAINWEAVE_KUBECONFIG, else where hack/cluster.py puts it."""
    env = os.environ.get("TRAINWEAVE_KUBECONFIG")
    if env:
        return Path(env)
    state = os.environ.get("TRAINWEAVE_STATE_DIR")
    if state:
        return Path(state) / "kubeconfig"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "trainweave" / "cluster" / "kubeconfig"


def api_client(kubeconfig: Path) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), client_configuration=cfg
    )
    return client.ApiClient(configuration=cfg)


class Timeout(AssertionError):
    pass


# 404: not created yet (or a cache behind); 409: a write raced another; 429 and 5xx: the API
# server busy or restarting (the chaos test restarts it); 0: the client gave up on the connection.
TRANSIENT_STATUS = frozenset({0, 404, 409, 429, 500, 502, 503, 504})


def transient(err: BaseException) -> str | None:
    """What a wait may retry, as a line for its timeout message; None: the wait must fail now."""
    if isinstance(err, ApiException):
        return (
            f"ApiException {err.status}: {err.reason}" if err.status in TRANSIENT_STATUS else None
        )
    if isinstance(err, urllib3.exceptions.HTTPError | ConnectionError):
        return f"{type(err).__name__}: {err}"
    return None


def wait_until(
    what: str,
    fn: Callable[[], T | None],
    timeout: float = 60.0,
    interval: float = 0.25,
) -> T:
    """Call fn until it returns something truthy; return it. Fail with `what` at the deadline,
    or at once when fn raises something that is not ``transient``."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = fn()
        except Exception as e:
            why = transient(e)
            if why is None:
                raise
            value, last = None, why
        if value:
            return value
        if last is None or not isinstance(last, str):
            last = value
        if time.monotonic() >= deadline:
            raise Timeout(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def gone(read: Callable[[], object]) -> bool:
    """For a wait on something going away: ``read`` raising 404 (or returning None) is gone."""
    try:
        return read() is None
    except ApiException as e:
        if e.status == 404:
            return True
        raise


def resumable_watch(
    list_fn: Callable[..., object],
    *args: object,
    stopped: threading.Event,
    on_object: Callable[[dict[str, Any]], None],
) -> str:
    """Watch ``list_fn(*args)`` in 2 s slices until ``stopped``, each slice from the last
    resourceVersion, calling ``on_object`` with every object an event carries (as JSON). 410 Gone
    relists; a broken connection (an API server restart) waits 0.5 s and resumes. Returns "" once
    stopped, or "STATUS REASON" of any other API error, which ends the watch."""
    version: str | None = None
    while not stopped.is_set():
        w = watch.Watch()  # type: ignore[no-untyped-call]
        kwargs: dict[str, Any] = {"timeout_seconds": 2}
        if version:
            kwargs["resource_version"] = version
        try:
            for event in w.stream(list_fn, *args, **kwargs):  # type: ignore[no-untyped-call]
                on_object(event["raw_object"])
            version = w.resource_version
        except ApiException as err:
            if err.status != 410:
                return f"{err.status} {err.reason}"
            version = None
        except urllib3.exceptions.HTTPError:
            stopped.wait(0.5)
    return ""


def load_manifest(name: str, **subst: str) -> Any:
    """A YAML file under tests/e2e/manifests, with ${KEY} replaced by the given values."""
    text = (MANIFESTS / name).read_text()
    for k, v in subst.items():
        text = text.replace("${" + k + "}", v)
    docs = [d for d in yaml.safe_load_all(text) if d]
    return docs[0] if len(docs) == 1 else docs


def parse_time(value: str | datetime | None) -> datetime:
    if value is None:
        raise ValueError("no timestamp")
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def condition_is(obj: dict[str, Any] | None, ctype: str, status: str = "True") -> bool:
    c = condition(obj or {}, ctype)
    return c is not None and c.get("status") == status


class Kube:
    """Thin typed-ish wrapper over the official client for what the e2e tests do."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    # -- namespaces -----------------------------------------------------------------------------
    def create_namespace(self, name: str, labels: dict[str, str]) -> None:
        body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels))
        self.core.create_namespace(body)
        # The default ServiceAccount (kcm) must exist before pods can be created.
        wait_until(
            f"ServiceAccount default in {name}",
            lambda: self._exists(
                lambda: self.core.read_namespaced_service_account("default", name)
            ),
            timeout=60,
        )

    def delete_namespace(self, name: str, wait: float = 0) -> None:
        try:
            self.core.delete_namespace(name)
        except ApiException as e:
            if e.status != 404:
                raise
        if wait:
            wait_until(
                f"namespace {name} gone",
                lambda: gone(lambda: self.core.read_namespace(name)),
                timeout=wait,
            )

    @staticmethod
    def _exists(fn: Callable[[], object]) -> bool:
        try:
            fn()
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise

    # -- custom objects ---------------------------------------------------------------------------
    def create(
        self,
        gv: tuple[str, str],
        plural: str,
        obj: dict[str, Any],
        namespace: str | None = None,
        exist_ok: bool = False,
    ) -> dict[str, Any]:
        """Create ``obj``; with ``exist_ok`` an object shared by tests that run at once (a
        ResourceFlavor) may already be there: a 409 returns the existing one."""
        group, version = gv
        try:
            if namespace:
                out = self.custom.create_namespaced_custom_object(
                    group, version, namespace, plural, obj
                )
            else:
                out = self.custom.create_cluster_custom_object(group, version, plural, obj)
        except ApiException as e:
            if e.status != 409 or not exist_ok:
                raise
            existing = self.get(gv, plural, obj["metadata"]["name"], namespace)
            if existing is None:
                raise
            return existing
        return dict(cast("dict[str, Any]", out))

    def get(
        self, gv: tuple[str, str], plural: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        group, version = gv
        try:
            if namespace:
                out = self.custom.get_namespaced_custom_object(
                    group, version, namespace, plural, name
                )
            else:
                out = self.custom.get_cluster_custom_object(group, version, plural, name)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return dict(cast("dict[str, Any]", out))

    def list(
        self, gv: tuple[str, str], plural: str, namespace: str | None = None, selector: str = ""
    ) -> list[dict[str, Any]]:
        group, version = gv
        if namespace:
            out = self.custom.list_namespaced_custom_object(
                group, version, namespace, plural, label_selector=selector
            )
        else:
            out = self.custom.list_cluster_custom_object(
                group, version, plural, label_selector=selector
            )
        return list(cast("dict[str, Any]", out)["items"])

    def delete(
        self, gv: tuple[str, str], plural: str, name: str, namespace: str | None = None
    ) -> None:
        group, version = gv
        try:
            if namespace:
                self.custom.delete_namespaced_custom_object(group, version, namespace, plural, name)
            else:
                self.custom.delete_cluster_custom_object(group, version, plural, name)
        except ApiException as e:
            if e.status != 404:
                raise

    # -- typed shortcuts --------------------------------------------------------------------------
    def workflow(self, ns: str, name: str) -> dict[str, Any]:
        wf = self.get(ARGO, "workflows", name, ns)
        assert wf is not None, f"workflow {ns}/{name} not found"
        return wf

    def workload(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.get(KUEUE, "workloads", name, ns)

    def pods(self, ns: str, selector: str = "") -> builtins.list[Pod]:
        return list(self.core.list_namespaced_pod(ns, label_selector=selector).items)

    def group_pods(self, ns: str, group: str) -> builtins.list[Pod]:
        pods = self.pods(ns, f"kueue.x-k8s.io/pod-group-name={group}")
        return sorted(pods, key=lambda p: p.metadata.creation_timestamp)

    def wait_workflow_phase(
        self, ns: str, name: str, phases: tuple[str, ...], timeout: float = 120
    ) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            wf = self.workflow(ns, name)
            return wf if (wf.get("status") or {}).get("phase") in phases else None

        return wait_until(f"workflow {ns}/{name} phase in {phases}", done, timeout=timeout)

    def wait_workload(
        self,
        ns: str,
        name: str,
        pred: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = 60,
    ) -> dict[str, Any]:
        def ok() -> dict[str, Any] | None:
            wl = self.workload(ns, name)
            return wl if wl is not None and pred(wl) else None

        return wait_until(f"Workload {ns}/{name}: {what}", ok, timeout=timeout)


def workflow_nodes(wf: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from ((wf.get("status") or {}).get("nodes") or {}).values()


def pod_nodes(wf: dict[str, Any], display_prefix: str) -> list[dict[str, Any]]:
    """Pod-type nodes whose displayName starts with the prefix (retries are `name(N)`)."""
    nodes = [
        n
        for n in workflow_nodes(wf)
        if n.get("type") == "Pod" and str(n.get("displayName", "")).startswith(display_prefix)
    ]
    return sorted(nodes, key=lambda n: str(n.get("startedAt") or ""))
