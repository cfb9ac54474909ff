"""``python crash_after_writes.py N ARGS...``: ``trainweave ARGS`` whose process dies right after
its N-th write to the API server, as a SIGKILL would leave it (``os._exit``: no clean-up, no
Lease release). Lease and Event writes are not counted: the crash lands between two writes of a
reconcile (a create, a patch, a delete), wherever in the reconcile that falls.

tests/e2e/test_crash_points.py runs the controller this way with N=1 over and over, so every
write boundary of a pipeline's life is a crash point.
"""

from __future__ import annotations

import os
import sys

from trainweave.integrations.cluster import kube
from trainweave.integrations.views.requests import api

UNCOUNTED = {api.LEASE.plural, api.EVENT.plural}


def main() -> int:
    limit = int(sys.argv[1])
    writes = 0
    send = kube.KubeClient.send

    def counting(self: kube.KubeClient, req: api.Request) -> api.Json:
        nonlocal writes
        out = send(self, req)
        resource = next((p for p in req.path.split("/") if p in PLURALS), "?")
        if req.is_write and resource not in UNCOUNTED:
            writes += 1
            if writes >= limit:
                print(f"crash-after-writes: exit after write {writes}: {req.method} {req.path}",
                      file=sys.stderr, flush=True)  # fmt: skip
                os._exit(137)
        return out

    # the fault is injected from outside the product: this process replaces the one method every
    # API request goes through, before the controller is built (mypy forbids assigning methods)
    kube.KubeClient.send = counting  # type: ignore[method-assign]
    from trainweave.cli import main as cli

    return cli(sys.argv[2:])


PLURALS = {k.plural for k in api.BY_KIND.values()}

if __name__ == "__main__":
    sys.exit(main())
