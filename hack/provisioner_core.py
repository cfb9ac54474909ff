"""The decisions of the ProvisioningRequest stand-in (hack/provisioner.py): state in, actions
out. Pure: no API server, no clock (``now`` is passed in), no randomness.

It does what cluster-autoscaler does for the two classes Kueue's ProvisioningRequest admission
check asks for (docs/provisioning.md, "Upstream behaviour (research)"). Upstream paths are
under ``cluster-autoscaler/`` at the tag cluster-autoscaler-1.36.1 of kubernetes/autoscaler
(CA below), unless "CA master" (kubernetes-sigs/cluster-autoscaler, ``pkg/``):

- one pass per tick, ProvisioningRequests oldest first; other classes are not ours
  (``provisioningrequest/supported_classes.go:35-45``);
- a request with ``Failed`` or ``BookingExpired`` true is done (``processors/provreq/
  processor.go:91-93``); never ``Provisioned`` and older than 7 days: ``Failed/Expired``
  (``processor.go:99-104``);
- ``Accepted`` when it is taken up (``processors/provreq/injector.go:76-85``,
  ``provisioningrequest/checkcapacity/provisioningclass.go:120-123``); a PodTemplate it names
  is missing: ``Failed/FailedToCreatePods`` (``injector.go:126-130``);
- after ``Provisioned=False`` it is retried only when the backoff since that condition passed,
  1 min doubling to 10 min (``injector.go:56-71``, ``config/flags/flags.go:224-225``);
- check-capacity: every pod fits the free capacity: ``Provisioned/CapacityIsFound``; else
  ``Provisioned=False/CapacityIsNotFound``, or ``Failed`` with the parameter ``noRetry: "true"``
  (``checkcapacity/provisioningclass.go:176-206``); it never adds nodes;
- best-effort-atomic: what fits the free capacity stays; the rest gets new nodes of the
  template, all or none: ``Provisioned/CapacityIsProvisioned`` as soon as the scale-up is
  requested (``provisioningrequest/besteffortatomic/provisioning_class.go:79-168``: "admits
  workload immediately after successful request"), the nodes appear after the provisioning
  delay; all fits already: ``Provisioned/CapacityIsFound``; no room in the node group:
  ``Provisioned=False/CapacityIsNotFound``;
- free capacity leaves out what bound pods use and what provisioned requests book
  (``processor.go:138-171``, ``provisioningrequest/conditions/conditions.go:61-73``);
- the booking ends with ``BookingExpired/CapacityReservationTimeExpired`` 10 min after
  ``Provisioned`` (``processor.go:39-45, 94-98, 106-108``), or, in CA master, with
  ``BookingExpired/CapacityBookingConsumed`` once as many pods carrying
  ``autoscaling.x-k8s.io/consume-provisioning-request: <name>`` are bound as it asked for
  (``pkg/processors/provreq/processor.go:150-171``; kubernetes/autoscaler PR 9806);
- a node made for a request whose booking is over (or which is gone) that has no pod for the
  scale-down-unneeded time (10 min, ``config/const.go:46``) is deleted.

Fault injection, not CA's: ``fail_next`` fails the next requests taken up
(``Failed/InjectedFailure``); ``revoke`` sets ``CapacityRevoked`` on a provisioned request and
deletes its nodes (CA never sets ``CapacityRevoked``; Kueue deactivates the Workload on it).
"""

from __future__ import annotations

from dataclasses import replace

from provisioner_fit import PodShape, Snapshot, pack
from provisioner_model import (
    ACCEPTED,
    ATOMIC,
    BOOKING_EXPIRED,
    CAPACITY_REVOKED,
    CHECK_CAPACITY,
    EXPIRATION_SECONDS,
    FAILED,
    MESSAGES,
    PROVISIONED,
    Action,
    Condition,
    Config,
    CreateNode,
    Decision,
    DeleteNode,
    Memory,
    Plan,
    RecordPlan,
    Request,
    SetConditions,
    World,
    node_name,
    with_condition,
)


def decide(world: World, memory: Memory, config: Config, now: float) -> Decision:
    """One tick: the actions that bring ``world`` where cluster-autoscaler would take it."""
    return _Tick(world, memory, config, now).run()


class _Tick:
    """The accumulator of one ``decide``: actions, memory and the capacity snapshot."""

    def __init__(self, world: World, memory: Memory, config: Config, now: float) -> None:
        self.world, self.config, self.now = world, config, now
        self.fail_next, self.revoke = memory.fail_next, set(memory.revoke)
        self.backoff = {
            r.key: memory.backoff[r.key] for r in world.requests if r.key in memory.backoff
        }
        self.empty_since = dict(memory.empty_since)
        # other classes are another provisioner's (supported_classes.go:35-45)
        self.ours = [r for r in world.requests if r.class_name in (CHECK_CAPACITY, ATOMIC)]
        self.requests = {r.key: r for r in self.ours}
        self.changed: dict[str, tuple[Condition, ...]] = {}
        self.plans: list[Action] = []
        self.actions: list[Action] = []
        self.node_names = {n.shape.name for n in world.nodes}
        self.snapshot = self._snapshot()

    def run(self) -> Decision:
        for req in sorted(self.ours, key=lambda r: (r.created, r.key)):
            self._request(req)
        self._scale_down()
        sets = [
            SetConditions(self.requests[k].namespace, self.requests[k].name, conditions)
            for k, conditions in self.changed.items()
        ]
        memory = Memory(self.fail_next, frozenset(self.revoke), self.backoff, self.empty_since)
        # a plan is written before the Provisioned it stands behind, nodes after both
        return Decision((*self.plans, *sets, *self.actions), memory)

    # -- the snapshot -----------------------------------------------------------------------------
    def _planned(self, req: Request) -> list[str]:
        return [
            node_name(self.config.prefix, req.key, i)
            for i in range(req.plan.nodes if req.plan else 0)
        ]

    def _snapshot(self) -> Snapshot:
        """Ready nodes, nodes asked for but not there yet (CA's upcoming nodes), minus what bound
        pods use, minus the bookings of the requests that hold capacity (processor.go:138-171)."""
        snap = Snapshot(n.shape for n in self.world.nodes)
        for req in self.ours:
            for name in self._planned(req):
                if name not in self.node_names and self._holds(req):
                    snap.add(replace(self.config.template, name=name))
        for pod in self.world.pods:
            if pod.node:
                snap.take(pod.node, pod.shape)
        for req in self.ours:
            if self._holds(req) and not self._consumed(req) and req.pods:
                snap.place_all(req.pods)
        return snap

    def _holds(self, req: Request) -> bool:
        """The request books capacity: provisioned (or its nodes awaited) and not over."""
        over = req.true(FAILED) or req.true(BOOKING_EXPIRED) or req.true(CAPACITY_REVOKED)
        return not over and (req.true(PROVISIONED) or req.plan is not None)

    def _consumed(self, req: Request) -> bool:
        """As many pods naming it in the consume annotation are bound as it asked for."""
        if not self.config.consumed_ends_booking:
            return False
        bound = sum(
            1
            for p in self.world.pods
            if p.node and p.namespace == req.namespace and p.consumes == req.name
        )
        return bound >= req.count

    # -- one request ------------------------------------------------------------------------------
    def _set(
        self, req: Request, ctype: str, status: str, reason: str, message: str = ""
    ) -> Request:
        new = Condition(ctype, status, reason, message or MESSAGES.get(reason, reason), self.now)
        req = replace(req, conditions=with_condition(req.conditions, new))
        self.requests[req.key], self.changed[req.key] = req, req.conditions
        return req

    def _request(self, req: Request) -> None:
        if self._revoked(req) or req.true(FAILED) or req.true(BOOKING_EXPIRED):
            return
        if req.true(PROVISIONED):
            self.backoff.pop(req.key, None)  # injector.go:52-54
            req = self._end_booking(req)
            if self._holds(req):  # nodes not there when the booking ends are never made
                self._create_due(req)
        elif req.plan is not None:
            self._await_nodes(req)
        else:
            self._take_up(req)

    def _revoked(self, req: Request) -> bool:
        """Fault injection: CapacityRevoked on a provisioned request, its nodes deleted."""
        if req.true(CAPACITY_REVOKED):
            return True
        wanted = req.revoke or req.key in self.revoke or req.name in self.revoke
        if not (wanted and req.true(PROVISIONED)):
            return False
        self.revoke -= {req.key, req.name}
        self._set(
            req,
            CAPACITY_REVOKED,
            "True",
            "CapacityRevoked",
            "revoked by the test (fault injection)",
        )
        for node in self.world.nodes:
            if node.owner == req.key:
                self.actions.append(DeleteNode(node.shape.name))
                self.node_names.discard(node.shape.name)
        return True

    def _end_booking(self, req: Request) -> Request:
        """processor.go:94-98 (time), CA master processor.go:164-171 (consumed)."""
        provisioned = req.condition(PROVISIONED)
        assert provisioned is not None
        if self.now > provisioned.at + self.config.booking_seconds:
            return self._set(req, BOOKING_EXPIRED, "True", "CapacityReservationTimeExpired")
        if self._consumed(req):
            return self._set(req, BOOKING_EXPIRED, "True", "CapacityBookingConsumed")
        return req

    def _create_due(self, req: Request) -> None:
        """The nodes of a scale-up, once the provisioning delay since it was asked for passed."""
        if req.plan is None or self.now < req.plan.at + self.config.provision_delay_seconds:
            return
        for name in self._planned(req):
            if name not in self.node_names:
                self.actions.append(CreateNode(name, req.key))
                self.node_names.add(name)

    def _await_nodes(self, req: Request) -> None:
        """--wait-for-nodes: Provisioned once every node of the plan exists and is Ready."""
        self._create_due(req)
        ready = {n.shape.name for n in self.world.nodes if n.shape.schedulable}
        if all(name in ready for name in self._planned(req)):
            self._set(req, PROVISIONED, "True", "CapacityIsProvisioned")

    def _due(self, req: Request) -> bool:
        """injector.go:56-71: after Provisioned=False, wait 1 min, then 2, 4, ... up to 10."""
        provisioned = req.condition(PROVISIONED)
        if provisioned is None:
            return True
        wait = self.backoff.get(req.key, self.config.retry_initial_seconds)
        if provisioned.at + wait < self.now:
            self.backoff[req.key] = min(2 * wait, self.config.retry_max_seconds)
            return True
        return False

    def _take_up(self, req: Request) -> None:
        if self.now > req.created + EXPIRATION_SECONDS:
            self._set(req, FAILED, "True", "Expired")
            return
        if not self._due(req):
            return
        pods = req.pods
        if pods is None:
            self._set(req, FAILED, "True", "FailedToCreatePods", "a PodTemplate is missing")
            return
        if not req.true(ACCEPTED):
            req = self._set(req, ACCEPTED, "True", "Accepted")
        if self.fail_next > 0:
            self.fail_next -= 1
            self._set(req, FAILED, "True", "InjectedFailure", "failed by the test (--fail-next)")
        elif req.class_name == CHECK_CAPACITY:
            self._check_capacity(req, pods)
        else:
            self._scale_up(req, pods)

    def _check_capacity(self, req: Request, pods: tuple[PodShape, ...]) -> None:
        trial = self.snapshot.fork()
        if not trial.place_all(pods):
            self.snapshot = trial
            self._set(req, PROVISIONED, "True", "CapacityIsFound")
        elif req.parameters.get("noRetry") == "true":
            self._set(
                req, FAILED, "True", "CapacityIsNotFound", "CA could not find requested capacity"
            )
        else:
            self._set(req, PROVISIONED, "False", "CapacityIsNotFound")

    def _scale_up(self, req: Request, pods: tuple[PodShape, ...]) -> None:
        trial = self.snapshot.fork()
        rest = trial.place_all(pods)
        if not rest:
            self.snapshot = trial
            self._set(req, PROVISIONED, "True", "CapacityIsFound")
            return
        count = pack(rest, self.config.template)
        if count is None or self._group_size() + count > self.config.max_nodes:
            self._set(req, PROVISIONED, "False", "CapacityIsNotFound")
            return
        plan = Plan(count, self.now)
        req = replace(req, plan=plan)
        self.requests[req.key] = req
        for name in self._planned(req):
            trial.add(replace(self.config.template, name=name))
        trial.place_all(rest)
        self.snapshot = trial
        self.plans.append(RecordPlan(req.namespace, req.name, plan))
        if not self.config.wait_for_nodes:
            self._set(req, PROVISIONED, "True", "CapacityIsProvisioned")

    def _group_size(self) -> int:
        """Nodes of the group: ours that exist, plus those asked for and not there yet."""
        ours = {n.shape.name for n in self.world.nodes if n.owner is not None}
        ours &= self.node_names  # not those deleted in this tick
        for req in self.requests.values():
            if self._holds(req):
                ours |= set(self._planned(req))
        return len(ours)

    # -- scale-down -------------------------------------------------------------------------------
    def _scale_down(self) -> None:
        """Our nodes with no pod and no active booking, for the unneeded time, are deleted."""
        busy = {p.node for p in self.world.pods if p.node}
        guarded = {n for r in self.requests.values() if self._holds(r) for n in self._planned(r)}
        seen = set()
        for node in self.world.nodes:
            name = node.shape.name
            if node.owner is None or name not in self.node_names:
                continue
            seen.add(name)
            if name in busy or name in guarded:
                self.empty_since.pop(name, None)
                continue
            since = self.empty_since.setdefault(name, self.now)
            if self.now - since >= self.config.scale_down_unneeded_seconds:
                self.actions.append(DeleteNode(name))
                self.empty_since.pop(name)
        self.empty_since = {k: v for k, v in self.empty_since.items() if k in seen}
