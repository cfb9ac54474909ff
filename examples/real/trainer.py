"""Trainer: data-parallel linear regression with a real TCP rendezvous and all-reduce.

A torchrun-compatible entry: reads the env Trainer's torch plugin (and trainweave's
``adapters/trainjob/policies/torch.py``) sets, PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_MASTER_ADDR
and PET_MASTER_PORT; with PET_NPROC_PER_NODE > 1 it starts that many local workers as torchrun
does (LOCAL_RANK, RANK, WORLD_SIZE). Global rank 0 listens on PET_MASTER_PORT; every other rank
connects to PET_MASTER_ADDR, retrying the DNS lookup and the connect (the headless Service
name resolves only once the master pod is up; collective.py has the wire protocol). Each step every rank sends the gradient of its shard (rows i with i % world == rank) to
rank 0, which sums them and broadcasts the average; every rank applies it, so all hold the same
model, which they confirm by hash at the end. Rank 0 writes ``$WORKSPACE/output/model.json``.

Env: TRAIN_STEPS (50), LEARNING_RATE (0.1), RENDEZVOUS_TIMEOUT_SECONDS (120),
STEP_TIMEOUT_SECONDS (60), STEP_SLEEP_SECONDS (0: a pause after each step, below
STEP_TIMEOUT_SECONDS, so a run lasts long enough to be preempted mid-run), FAIL_WITH_EXIT_CODE
(exit with it before training), WORKSPACE. With Trainer's KUBEFLOW_TRAINER_SERVER_* env (the
controller's ``--trainjob-status``) rank 0 reports progress and the loss every 10 steps
(progress.py).
Exit codes as workspace.py: 2 bad env, 3 bad data, 4 rendezvous timeout or peer lost. SIGTERM
keeps Python's default action (the process dies of it, exit code 143 to the kubelet), as a
preempted pod's container should.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time

import collective
import progress
import workspace as ws

# --- configuration ---------------------------------------------------------------------------


def nproc_per_node() -> int:
    raw = os.environ.get("PET_NPROC_PER_NODE") or "1"
    if raw in ("auto", "cpu", "gpu"):
        return 1  # CPU only, no device discovery: one process per node
    return ws.env_int("PET_NPROC_PER_NODE", 1, minimum=1)


def check_deliberate_failure(who: str) -> None:
    raw = os.environ.get("FAIL_WITH_EXIT_CODE")
    if raw is None or raw == "":
        return
    code = ws.env_int("FAIL_WITH_EXIT_CODE", minimum=1)
    if code > 255:
        ws.fail(f"FAIL_WITH_EXIT_CODE={code} is not an exit code (1-255)", ws.EXIT_CONFIG)
    print(f"{who}: FAIL_WITH_EXIT_CODE={code}: exiting {code} before training", file=sys.stderr)
    sys.stderr.flush()
    sys.exit(code)


# --- framing ---------------------------------------------------------------------------------
# --- training --------------------------------------------------------------------------------


def load_inputs() -> tuple[ws.Rows, list[float], str, collective.Message]:
    """(all rows, initial parameters, dataset id, dataset meta), checked against each other."""
    folder = ws.root() / "dataset"
    dataset_id = ws.verify_sums(folder)
    meta = ws.read_json(folder / ws.META_FILE)
    model = ws.read_model(ws.root() / "model" / "model.json")
    if meta.get("features") != model["features"]:
        ws.fail(
            f"the dataset has {meta.get('features')} features, the model {model['features']}",
            ws.EXIT_DATA,
        )
    rows = ws.read_rows(folder / ws.DATASET_FILE, model["features"])
    return rows, ws.parameters(model), dataset_id, meta


def worker(rank: int, world: int) -> None:
    host = os.environ.get("PET_MASTER_ADDR") or ws.fail(
        "PET_MASTER_ADDR is not set", ws.EXIT_CONFIG
    )
    port = ws.env_int("PET_MASTER_PORT", minimum=1)
    steps = ws.env_int("TRAIN_STEPS", 50, minimum=1)
    lr = ws.env_float("LEARNING_RATE", 0.1)
    rendezvous_timeout = float(ws.env_int("RENDEZVOUS_TIMEOUT_SECONDS", 120, minimum=1))
    step_timeout = float(ws.env_int("STEP_TIMEOUT_SECONDS", 60, minimum=1))
    step_sleep = ws.env_float("STEP_SLEEP_SECONDS", 0.0)
    if not 0 <= step_sleep < step_timeout:
        ws.fail(
            f"STEP_SLEEP_SECONDS={step_sleep} is not in [0, STEP_TIMEOUT_SECONDS={step_timeout:g})",
            ws.EXIT_CONFIG,
        )

    rows, params, dataset_id, meta = load_inputs()
    initial_sha = ws.model_sha256(params)
    shard = [row for i, row in enumerate(rows) if i % world == rank]
    collective.say(
        f"rank={rank} world={world}: dataset {dataset_id[:12]} ({len(rows)} rows, "
        f"shard {len(shard)}), initial model {initial_sha[:12]}, {steps} steps, lr {lr}"
    )
    hello = {
        "type": "hello",
        "rank": rank,
        "world": world,
        "dataset": dataset_id,
        "model": initial_sha,
    }
    peers: dict[int, socket.socket] = {}
    master = None
    if rank == 0:
        server = collective.listen(port)
        collective.say(f"rank=0: listening on port {port} for {world - 1} peers")
        try:
            peers = collective.gather_peers(server, world, hello, rendezvous_timeout, step_timeout)
        finally:
            server.close()
    else:
        master = collective.connect_to_master(rank, host, port, rendezvous_timeout)
        master.settimeout(step_timeout)
        collective.send_or_fail(master, hello, "rank 0")
        collective.say(f"rank={rank}: connected to the master {host}:{port}")
        collective.expect(master, "start", "rank 0")
    collective.say(f"rank={rank}: rendezvous complete, world={world}")

    reduce = collective.AllReduce(rank, peers, master)
    initial_loss = None
    started = time.monotonic()
    for step in range(1, steps + 1):
        sse, grad = ws.squared_error(params, shard)
        loss, average = reduce.average(step, sse, grad, len(shard))
        if initial_loss is None:
            initial_loss = loss
        params = [p - lr * g for p, g in zip(params, average, strict=True)]
        if step % 10 == 0 or step == steps:
            collective.say(f"step={step} loss={loss:.6f} rank={rank} world={world}")
            if rank == 0 and step < steps:  # the last update is the final loss, below
                left = (time.monotonic() - started) / step * (steps - step)
                progress.report(step * 100 // steps, round(left), {"loss": f"{loss:.6f}"})
        if step_sleep:
            time.sleep(step_sleep)
    sse, grad = ws.squared_error(params, shard)
    final_loss, _ = reduce.average(steps + 1, sse, grad, len(shard))
    digest = ws.model_sha256(params)
    reduce.agree(digest)
    collective.say(f"rank={rank} world={world}: final loss={final_loss:.6f} model_sha256={digest}")
    if rank == 0:
        progress.report(100, 0, {"loss": f"{final_loss:.6f}"})
    for conn in (*peers.values(), *([master] if master else [])):
        conn.close()
    if rank != 0:
        return
    *weights, bias = params
    output = ws.root() / "output" / "model.json"
    ws.write_json(
        output,
        {
            "features": len(weights),
            "weights": weights,
            "bias": bias,
            "initial_loss": initial_loss,
            "final_loss": final_loss,
            "steps": steps,
            "learning_rate": lr,
            "world_size": world,
            "dataset_sha256": dataset_id,
            "initial_model_sha256": initial_sha,
            "model_sha256": digest,
            "true_weights": meta.get("true_weights"),
            "true_bias": meta.get("true_bias"),
        },
    )
    collective.say(f"rank=0: wrote {output}")


# --- entry -----------------------------------------------------------------------------------


def launch_local_workers(nproc: int, node_rank: int, world: int) -> None:
    """torchrun's part: ``nproc`` workers on this node; the first failure stops the rest."""
    collective.say(f"trainer: node {node_rank}: starting {nproc} local workers")
    procs = []
    for local in range(nproc):
        env = dict(os.environ, LOCAL_RANK=str(local), RANK=str(node_rank * nproc + local))
        env["WORLD_SIZE"] = str(world)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env))
    while True:
        codes = [p.poll() for p in procs]
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                p.wait()
            ws.fail(f"a local worker exited {failed[0]}", failed[0] if failed[0] > 0 else 1)
        if all(c == 0 for c in codes):
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            procs[codes.index(None)].wait(timeout=0.5)


def main() -> None:
    nnodes = ws.env_int("PET_NNODES", minimum=1)
    node_rank = ws.env_int("PET_NODE_RANK")
    nproc = nproc_per_node()
    if node_rank >= nnodes:
        ws.fail(f"PET_NODE_RANK={node_rank} is not below PET_NNODES={nnodes}", ws.EXIT_CONFIG)
    world = nnodes * nproc
    local = os.environ.get("LOCAL_RANK")
    if nproc > 1 and local is None:
        check_deliberate_failure(f"trainer node={node_rank}")
        launch_local_workers(nproc, node_rank, world)
        return
    rank = node_rank * nproc + (ws.env_int("LOCAL_RANK") if local is not None else 0)
    if rank >= world:
        ws.fail(f"LOCAL_RANK={local} is not below PET_NPROC_PER_NODE={nproc}", ws.EXIT_CONFIG)
    check_deliberate_failure(f"trainer rank={rank}")
    worker(rank, world)


if __name__ == "__main__":
    ws.run("trainer", main)
