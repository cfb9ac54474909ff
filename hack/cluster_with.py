"""`hack/cluster.py with -- CMD ARGS...`: run CMD against the local control plane, starting it
first when none runs and stopping it afterwards only if this call started it (make e2e, chaos,
e2e-real, bench-admission). The decision, apart from the processes, so tests/unit can drive it
with fakes; cluster.py gives it the real status/up/down/command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def run_with_cluster(
    command: Sequence[str],
    *,
    is_up: Callable[[], bool],
    up: Callable[[], int],
    down: Callable[[], int],
    run: Callable[[Sequence[str]], int],
    log: Callable[[str], None] = print,
) -> int:
    """The exit code of ``run(command)``, with the cluster up around it.

    A healthy running cluster (``is_up``) is used and left running. Otherwise ``up`` starts one:
    when it fails its code is returned and nothing runs (``up`` cleans up after itself); when it
    succeeds ``down`` follows the command, even if the command raised, and a failed ``down``
    turns the result into 1."""
    if not command:
        raise ValueError("no command to run")
    started = False
    if is_up():
        log("using the running cluster (left running)")
    else:
        rc = up()
        if rc != 0:
            return rc
        started = True
    rc = 1
    try:
        rc = run(command)
    finally:
        if started and down() != 0:
            rc = 1
    return rc
