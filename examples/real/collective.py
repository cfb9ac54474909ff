"""Rendezvous and all-reduce over TCP for trainer.py: rank 0 in the middle, no torch.

Messages are JSON (minijson) with a 4-byte big-endian length prefix. Rank 0 listens and gathers
a hello from every other rank, which must agree with it on the world size, the dataset and the
initial model; the others connect, retrying the DNS lookup and the connect (a headless Service
name resolves only once the master pod is up) and logging at most every 5 s. ``AllReduce``
averages per-rank sums through rank 0 and checks, at the end, that all ranks hold one model.
Failures raise ``workspace.WorkloadError`` with exit code 4 (rendezvous timeout, peer lost),
or the code rank 0 aborted everyone with.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import time
from typing import Any, NoReturn

import minijson
import workspace as ws

MAX_MESSAGE = 64 * 1024 * 1024
LOG_EVERY_SECONDS = 5.0
RETRY_PAUSE_SECONDS = 0.25
HELLO_TIMEOUT_SECONDS = 10.0
Message = dict[str, Any]


def say(text: str) -> None:
    """One line in one write, so local workers sharing stdout never interleave mid-line."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --- framing ---------------------------------------------------------------------------------


def send(sock: socket.socket, message: Message) -> None:
    data = minijson.dumps(message).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        chunks += chunk
    return bytes(chunks)


def receive(sock: socket.socket) -> Message:
    (size,) = struct.unpack("!I", _recv_exact(sock, 4))
    if size > MAX_MESSAGE:
        raise ConnectionError(f"message of {size} bytes is over the {MAX_MESSAGE} limit")
    message = minijson.loads(_recv_exact(sock, size).decode())
    if not isinstance(message, dict) or "type" not in message:
        raise ConnectionError(f"malformed message {message!r}")
    if message["type"] == "abort":
        ws.fail(f"rank 0 aborted: {message.get('reason')}", int(message.get("code", 1)))
    return message


def expect(sock: socket.socket, kind: str, peer: str) -> Message:
    try:
        message = receive(sock)
    except (OSError, ValueError) as e:
        ws.fail(f"lost {peer}: {e or type(e).__name__}", ws.EXIT_RENDEZVOUS)
    if message["type"] != kind:
        ws.fail(f"{peer} sent {message['type']!r}, expected {kind!r}", ws.EXIT_RENDEZVOUS)
    return message


# --- rendezvous ------------------------------------------------------------------------------


def connect_to_master(rank: int, host: str, port: int, timeout: float) -> socket.socket:
    """Connect to rank 0, retrying the lookup and the connect until ``timeout`` seconds pass."""
    start = time.monotonic()
    last_log = start - LOG_EVERY_SECONDS
    attempt = 0
    while True:
        attempt += 1
        remaining = timeout - (time.monotonic() - start)
        try:
            addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            reason = f"DNS lookup of {host}: {e.strerror}"
        else:
            reason = "no address"
            for family, kind, proto, _, address in addresses:
                sock = socket.socket(family, kind, proto)
                sock.settimeout(max(0.1, min(5.0, remaining)))
                try:
                    sock.connect(address)
                    return sock
                except OSError as e:
                    sock.close()
                    reason = f"connect to {address[0]}:{port}: {e.strerror or e}"
        now = time.monotonic()
        if now - start >= timeout:
            ws.fail(
                f"rendezvous timeout: rank {rank} could not reach the master {host}:{port} "
                f"in {timeout:g}s ({attempt} attempts; last: {reason})",
                ws.EXIT_RENDEZVOUS,
            )
        if now - last_log >= LOG_EVERY_SECONDS:
            say(
                f"rank={rank}: waiting for the master {host}:{port} ({reason}); "
                f"attempt {attempt}, {now - start:.0f}s of {timeout:g}s"
            )
            last_log = now
        time.sleep(min(RETRY_PAUSE_SECONDS, max(0.0, timeout - (now - start))))


def listen(port: int) -> socket.socket:
    try:
        if socket.has_dualstack_ipv6():
            return socket.create_server(
                ("", port), family=socket.AF_INET6, dualstack_ipv6=True, reuse_port=False
            )
        return socket.create_server(("", port))
    except OSError as e:
        ws.fail(f"rank 0 cannot listen on port {port}: {e.strerror or e}", ws.EXIT_RENDEZVOUS)


def gather_peers(
    server: socket.socket, world: int, hello: Message, timeout: float, step_timeout: float
) -> dict[int, socket.socket]:
    """Rank 0: accept a hello from every other rank; abort all if one disagrees on the inputs."""
    peers: dict[int, socket.socket] = {}
    start = time.monotonic()
    last_log = start - LOG_EVERY_SECONDS
    while len(peers) < world - 1:
        now = time.monotonic()
        if now - last_log >= LOG_EVERY_SECONDS:
            say(f"rank=0: listening, {len(peers)} of {world - 1} peers connected")
            last_log = now
        remaining = timeout - (now - start)
        if remaining <= 0:
            missing = sorted(set(range(1, world)) - set(peers))
            abort(peers, f"ranks {missing} did not connect in {timeout:g}s", ws.EXIT_RENDEZVOUS)
        server.settimeout(min(LOG_EVERY_SECONDS, remaining))
        try:
            conn, address = server.accept()
        except TimeoutError:
            continue
        conn.settimeout(min(step_timeout, HELLO_TIMEOUT_SECONDS))
        try:
            message = receive(conn)
        except (OSError, ValueError) as e:
            say(f"rank=0: dropped a connection from {address[0]} before its hello: {e}")
            conn.close()
            continue
        rank = message.get("rank")
        if message.get("type") != "hello" or not isinstance(rank, int) or not 0 < rank < world:
            send(conn, {"type": "abort", "reason": f"bad hello {message!r}", "code": 2})
            conn.close()
            abort(peers, f"bad hello from {address[0]}: {message!r}", ws.EXIT_CONFIG)
        for key, code in (
            ("world", ws.EXIT_CONFIG),
            ("dataset", ws.EXIT_DATA),
            ("model", ws.EXIT_DATA),
        ):
            if message.get(key) != hello[key]:
                reason = f"rank {rank} has {key}={message.get(key)}, rank 0 has {hello[key]}"
                peers[rank] = conn
                abort(peers, reason, code)
        if rank in peers:
            say(f"rank=0: rank {rank} connected again; replacing its earlier connection")
            peers[rank].close()
        peers[rank] = conn
    for conn in peers.values():
        send(conn, {"type": "start"})
    return peers


def abort(peers: dict[int, socket.socket], reason: str, code: int) -> NoReturn:
    for conn in peers.values():
        with contextlib.suppress(OSError):
            send(conn, {"type": "abort", "reason": reason, "code": code})
        conn.close()
    ws.fail(reason, code)


# --- all-reduce ------------------------------------------------------------------------------


class AllReduce:
    """Sum-and-average of per-rank (squared-error sum, gradient sum, row count), via rank 0."""

    def __init__(self, rank: int, peers: dict[int, socket.socket], master: socket.socket | None):
        self.rank, self.peers, self.master = rank, peers, master

    def average(
        self, step: int, sse: float, grad: list[float], count: int
    ) -> tuple[float, list[float]]:
        mine = {"type": "grad", "step": step, "sse": sse, "grad": grad, "count": count}
        if self.master is not None:
            send_or_fail(self.master, mine, "rank 0")
            reply = expect(self.master, "avg", "rank 0")
            return float(reply["loss"]), [float(g) for g in reply["grad"]]
        total_sse, total_grad, total_count = sse, list(grad), count
        for rank in sorted(self.peers):
            theirs = expect(self.peers[rank], "grad", f"rank {rank}")
            if theirs["step"] != step:
                abort(self.peers, f"rank {rank} is at step {theirs['step']}, not {step}", 1)
            total_sse += theirs["sse"]
            total_grad = [a + b for a, b in zip(total_grad, theirs["grad"], strict=True)]
            total_count += theirs["count"]
        loss = total_sse / total_count
        average = [g / total_count for g in total_grad]
        for rank in sorted(self.peers):
            send_or_fail(
                self.peers[rank],
                {"type": "avg", "step": step, "loss": loss, "grad": average},
                f"rank {rank}",
            )
        return loss, average

    def agree(self, digest: str) -> None:
        """Every rank's model hash equals rank 0's, or all fail."""
        if self.master is not None:
            send_or_fail(self.master, {"type": "done", "model_sha256": digest}, "rank 0")
            expect(self.master, "ok", "rank 0")
            return
        for rank in sorted(self.peers):
            theirs = expect(self.peers[rank], "done", f"rank {rank}")["model_sha256"]
            if theirs != digest:
                abort(self.peers, f"rank {rank} ended with model {theirs}, rank 0 with {digest}", 1)
        for rank in sorted(self.peers):
            send_or_fail(self.peers[rank], {"type": "ok"}, f"rank {rank}")


def send_or_fail(sock: socket.socket, message: Message, peer: str) -> None:
    try:
        send(sock, message)
    except OSError as e:
        ws.fail(f"lost {peer}: {e.strerror or e}", ws.EXIT_RENDEZVOUS)
