"""MPI hello: every rank that ``mpirun`` starts over SSH checks in with rank 0 over TCP.

Two modes, stdlib only (the image has python3-minimal):

``mpi_hello.py launch [--ssh-auth DIR] -- mpirun ...`` runs in the launcher before ``mpirun``.
It installs the private key of the SSH Secret (mounted at DIR, the runtime's
``sshAuthMountPath``) as ``~/.ssh/id_rsa`` mode 0600 with host-key checking off (``~/.ssh/config``,
as Trainer's MPI images configure it): Trainer mounts the key 0640, which OpenSSH refuses for the
user that owns it, here root. It waits until every host of the hostfile
(``$OMPI_MCA_orte_default_hostfile``) resolves and accepts a TCP connection on port 22 (the
launcher is admitted with the sshd pods as one gang and may start first), sets
``MPI_HELLO_ROOT`` to the first host (where ``mpirun`` places rank 0), then execs the rest.

``mpi_hello.py`` (no arguments) is one rank: it prints ``rank=R size=N host=H`` from OpenMPI's
``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE``. Rank 0 listens on ``MPI_HELLO_PORT`` (29600);
every other rank connects to ``MPI_HELLO_ROOT`` and sends its rank and host; rank 0 answers each
with the sum of all ranks once it has heard from every one, and each rank checks that sum.

Env: MPI_HELLO_ROOT, MPI_HELLO_PORT (29600), MPI_HELLO_TIMEOUT_SECONDS (120).
Exit codes: 2 bad usage or env, 4 a peer never came (timeout).
"""

from __future__ import annotations

import os
import socket
import sys
import time

EXIT_CONFIG = 2
EXIT_TIMEOUT = 4


def fail(message: str, code: int) -> None:
    print(f"mpi_hello: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name) or str(default)
    try:
        return int(raw)
    except ValueError:
        fail(f"{name}={raw!r} is not an integer", EXIT_CONFIG)
        raise


# --- launcher --------------------------------------------------------------------------------


def install_ssh_client(auth_dir: str) -> None:
    """~/.ssh/id_rsa (0600) from the Secret volume, and a config without host-key checks."""
    home = os.path.join(os.path.expanduser("~"), ".ssh")
    os.makedirs(home, mode=0o700, exist_ok=True)
    with open(os.path.join(auth_dir, "id_rsa"), "rb") as src:
        key = src.read()
    config = (
        b"Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
    )
    for name, data in (("id_rsa", key), ("config", config)):
        # 0600 whatever the umask (the container's is 0000): ssh refuses either file otherwise
        path = os.path.join(home, name)
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            out.write(data)
        os.chmod(path, 0o600)
    os.chmod(home, 0o700)


def hostfile_hosts(path: str) -> list[str]:
    with open(path) as f:
        return [line.split()[0] for line in f if line.strip() and not line.startswith("#")]


def wait_for_sshd(hosts: list[str], deadline: float) -> dict[str, str]:
    """host -> the address its sshd answered at."""
    reached: dict[str, str] = {}
    for host in hosts:
        while True:
            try:
                with socket.create_connection((host, 22), timeout=2) as conn:
                    reached[host] = str(conn.getpeername()[0])
                print(f"launcher: sshd is up on {host} ({reached[host]})", flush=True)
                break
            except OSError as err:
                if time.monotonic() > deadline:
                    fail(f"sshd on {host} never answered: {err}", EXIT_TIMEOUT)
                time.sleep(0.5)
    return reached


def pin_hosts(reached: dict[str, str]) -> None:
    """Each hostfile name with the address its sshd answered at, in /etc/hosts, and mpirun
    ssh-ing to every host itself (no tree spawn). On the real node the pod names resolved for an
    address-family-unspecified lookup (this process's connect) but not for an IPv4-only one, and
    the image's ssh said "Could not resolve hostname" for them (docs/real-containers.md); through
    /etc/hosts ssh finds them by the same names."""
    with open("/etc/hosts", "a") as f:
        f.writelines(f"{addr} {host}\n" for host, addr in reached.items())
    os.environ.setdefault("OMPI_MCA_plm_rsh_no_tree_spawn", "1")


def launch(argv: list[str]) -> None:
    auth_dir = "/etc/trainweave/ssh"
    if argv[:1] == ["--ssh-auth"] and len(argv) > 1:
        auth_dir, argv = argv[1], argv[2:]
    if argv[:1] != ["--"] or len(argv) < 2:
        fail("usage: mpi_hello.py launch [--ssh-auth DIR] -- COMMAND...", EXIT_CONFIG)
    command = argv[1:]
    # OpenMPI's own spelling of the variable (Trainer's MPI plugin sets it so), not ours to upper-case
    hostfile = os.environ.get("OMPI_MCA_orte_default_hostfile") or "/etc/mpi/hostfile"  # noqa: SIM112
    hosts = hostfile_hosts(hostfile)
    if not hosts:
        fail(f"{hostfile} names no hosts", EXIT_CONFIG)
    install_ssh_client(auth_dir)
    deadline = time.monotonic() + env_int("MPI_HELLO_TIMEOUT_SECONDS", 120)
    pin_hosts(wait_for_sshd(hosts, deadline))
    os.environ["MPI_HELLO_ROOT"] = hosts[0]
    print(f"launcher: hosts={','.join(hosts)}; exec {' '.join(command)}", flush=True)
    os.execvp(command[0], command)


# --- ranks -----------------------------------------------------------------------------------


def read_line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(256)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


def serve(size: int, port: int, deadline: float, host: str) -> None:
    """Rank 0: hear from ranks 1..size-1, then answer each with the sum of all ranks."""
    heard = {0: host}
    peers: list[socket.socket] = []
    with socket.create_server(("", port)) as server:
        while len(heard) < size:
            server.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                conn, _ = server.accept()
            except TimeoutError:
                fail(f"rank 0 heard only from ranks {sorted(heard)} of {size}", EXIT_TIMEOUT)
            conn.settimeout(10)
            rank, peer_host = read_line(conn).split()
            heard[int(rank)] = peer_host
            peers.append(conn)
        total = sum(heard)
        for conn in peers:
            conn.sendall(f"{total}\n".encode())
            conn.close()
    listing = " ".join(f"{r}@{h}" for r, h in sorted(heard.items()))
    print(f"rank=0 heard from all {size} ranks: {listing} sum={total}", flush=True)


def check_in(rank: int, root: str, port: int, deadline: float, host: str) -> int:
    """Rank > 0: tell rank 0 who we are (retrying until it listens); return its sum."""
    while True:
        try:
            conn = socket.create_connection((root, port), timeout=2)
            break
        except OSError as err:
            if time.monotonic() > deadline:
                fail(f"rank {rank} never reached rank 0 at {root}:{port}: {err}", EXIT_TIMEOUT)
            time.sleep(0.2)
    with conn:
        conn.settimeout(max(1.0, deadline - time.monotonic()))
        conn.sendall(f"{rank} {host}\n".encode())
        return int(read_line(conn))


def rank_main() -> None:
    if "OMPI_COMM_WORLD_RANK" not in os.environ:
        fail("not started by mpirun (no OMPI_COMM_WORLD_RANK)", EXIT_CONFIG)
    rank = env_int("OMPI_COMM_WORLD_RANK", 0)
    size = env_int("OMPI_COMM_WORLD_SIZE", 1)
    port = env_int("MPI_HELLO_PORT", 29600)
    deadline = time.monotonic() + env_int("MPI_HELLO_TIMEOUT_SECONDS", 120)
    host = socket.gethostname()
    print(f"rank={rank} size={size} host={host}", flush=True)
    if rank == 0:
        serve(size, port, deadline, host)
        return
    root = os.environ.get("MPI_HELLO_ROOT")
    if not root:
        fail("MPI_HELLO_ROOT is not set (mpirun -x MPI_HELLO_ROOT)", EXIT_CONFIG)
        return
    total = check_in(rank, root, port, deadline, host)
    expected = size * (size - 1) // 2
    if total != expected:
        fail(f"rank {rank}: rank 0 says sum={total}, expected {expected}", EXIT_CONFIG)
    print(f"rank={rank} checked in with rank 0 at {root}: sum={total}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["launch"]:
        launch(sys.argv[2:])
    else:
        rank_main()
