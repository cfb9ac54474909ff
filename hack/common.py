"""What every hack/ script shares: the paths of the caches and the cluster state, the pinned
versions (hack/versions.env), running commands, starting and stopping processes by pid, the
cluster state file (cluster.json) and the pids kwokctl keeps, and the openssl-made serving
certificates. Imported by cluster.py, control_plane.py, upstream.py, restart.py,
kueue_config.py, node.py, images*.py and k8s_rules.py; it imports none of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
HACK = ROOT / "hack"
VERSIONS = HACK / "versions.env"

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave"
IMAGES_CACHE = CACHE / "images"
STATE = Path(os.environ.get("TRAINWEAVE_STATE_DIR") or CACHE / "cluster")
KUBECONFIG = STATE / "kubeconfig"
# A second state dir (TRAINWEAVE_STATE_DIR) gets its own kwokctl cluster name, so two can coexist.
CLUSTER_NAME = (
    "trainweave-e2e"
    if "TRAINWEAVE_STATE_DIR" not in os.environ
    else "trainweave-e2e-" + hashlib.sha256(str(STATE).encode()).hexdigest()[:8]
)
LAST_LOGS = CACHE / "cluster-last-logs"


# ---------------------------------------------------------------------------------------------
# messages, versions, commands


def log(msg: str) -> None:
    print(f"cluster: {msg}", flush=True)


def die(msg: str) -> NoReturn:
    print(f"cluster: ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def read_env(path: Path) -> dict[str, str]:
    """KEY=value lines (comments and blank lines skipped): versions.env, an engines' sources.env."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def versions() -> dict[str, str]:
    """hack/versions.env: every pinned engine and tool version; ``ARGO_VERSION`` in the
    environment (``make e2e ARGO_VERSION=v4.0.7``) selects another Argo Workflows, one of
    ``ARGO_WORKFLOWS_SUPPORTED`` (docs/compatibility.md), as hack/build.sh does."""
    pins = read_env(VERSIONS)
    argo = os.environ.get("ARGO_VERSION", "")
    if argo and argo != pins["ARGO_WORKFLOWS_VERSION"]:
        supported = pins.get("ARGO_WORKFLOWS_SUPPORTED", "").split(",")
        if argo not in supported:
            die(
                f"ARGO_VERSION={argo}: not one of ARGO_WORKFLOWS_SUPPORTED ({', '.join(supported)})"
            )
        pins["ARGO_WORKFLOWS_VERSION"] = argo
    return pins


def go_build_flags() -> str:
    """hack/go-build-flags: the GOFLAGS of every Go build (hack/build.sh reads the same file), so
    the argoexec image's build reuses the packages the engines' builds compiled."""
    return (HACK / "go-build-flags").read_text().strip()


def engines_dir() -> Path:
    """Where hack/build.sh builds the engines of this versions.env (it prints the folder)."""
    out = subprocess.run(
        ["bash", str(HACK / "build.sh"), "--print-dir"], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip())


def run(
    *args: str | Path, check: bool = True, capture: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [str(a) for a in args]
    r = subprocess.run(argv, text=True, capture_output=capture, env={**os.environ, **(env or {})})
    if check and r.returncode != 0:
        if capture:
            sys.stderr.write(f"$ {' '.join(argv)[:300]}\n{r.stdout[-4000:]}{r.stderr[-4000:]}\n")
        raise subprocess.CalledProcessError(r.returncode, argv[:3])
    return r


def output(
    cmd: Sequence[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    """The stdout of ``cmd`` (stderr passes through); raises when it fails. ``env`` replaces the
    environment when given (a chroot's PATH)."""
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, check=True, text=True, stdout=subprocess.PIPE
    )
    return out.stdout


def go_module(module_at_version: str) -> dict[str, Any]:
    """`go mod download -json MODULE@VERSION`: Dir (its GOMODCACHE folder, hack/build.sh's
    `moddir`), Origin (the tag's commit); exits with Go's error when the download fails."""
    CACHE.mkdir(parents=True, exist_ok=True)  # outside any go.mod
    info: dict[str, Any] = json.loads(
        output(["go", "mod", "download", "-json", module_at_version], cwd=CACHE)
    )
    if info.get("Error"):
        raise SystemExit(f"go mod download {module_at_version}: {info['Error']}")
    return info


# ---------------------------------------------------------------------------------------------
# processes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, fn: Any, timeout: float, interval: float = 0.5) -> Any:
    """Poll fn() until it returns a truthy value, with a deadline."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except Exception as e:
            last = e
        time.sleep(interval)
    die(f"timed out after {timeout:.0f}s waiting for {what} (last error: {last})")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as dead
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_pid(pid: int, name: str, grace: float = 15.0) -> None:
    """SIGTERM one process we started (by id), then SIGKILL after a grace period."""
    if not pid_alive(pid):
        return
    log(f"stopping {name} (pid {pid})")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.2)
    log(f"{name} (pid {pid}) ignored SIGTERM; SIGKILL")
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


# ---------------------------------------------------------------------------------------------
# the cluster state: cluster.json, kwokctl's folder and pids


def read_json(path: Path) -> dict[str, Any] | None:
    """A state file (cluster.json, node.json), or None when it is missing or unreadable."""
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """A state file, replaced whole (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)


def state_file() -> Path:
    return STATE / "cluster.json"


def load_state() -> dict[str, Any] | None:
    return read_json(state_file())


def save_state(state: dict[str, Any]) -> None:
    write_json(state_file(), state)


def kwok_workdir() -> Path:
    return STATE / "kwok"


def kwok_cluster_dir() -> Path:
    """kwokctl's folder of this cluster: pki/, pids/, logs/, kwok.yaml."""
    return kwok_workdir() / "clusters" / CLUSTER_NAME


def kwok_pids() -> dict[str, int]:
    out: dict[str, int] = {}
    pids = kwok_cluster_dir() / "pids"
    for f in sorted(pids.glob("*.pid")) if pids.is_dir() else []:
        try:
            out[f.stem] = int(f.read_text().strip())
        except ValueError:
            continue
    return out


def all_pids(state: dict[str, Any] | None) -> dict[str, int]:
    pids = kwok_pids()
    for name, pid in ((state or {}).get("pids") or {}).items():
        pids[name] = int(pid)
    return pids


def apiserver_ready(kubectl: Path) -> bool:
    r = run(
        kubectl, "--kubeconfig", KUBECONFIG, "get", "--raw", "/readyz", check=False, capture=True
    )
    return r.returncode == 0 and r.stdout.strip() == "ok"


def kubectl_commands(bin_dir: Path) -> tuple[list[str], list[str]]:
    """``kubectl`` on this cluster's kubeconfig, and its server-side ``apply`` (field manager
    trainweave-e2e, conflicts forced)."""
    kubectl = [str(bin_dir / "kubectl"), "--kubeconfig", str(KUBECONFIG)]
    apply = [
        *kubectl,
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=trainweave-e2e",
    ]
    return kubectl, apply


# ---------------------------------------------------------------------------------------------
# certificates (openssl)


def make_certs(cert_dir: Path) -> bytes:
    """A CA and a serving cert for 127.0.0.1/localhost (Kueue webhooks and its metrics server)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = cert_dir / "ca.key", cert_dir / "ca.crt"
    key, csr, crt = cert_dir / "tls.key", cert_dir / "tls.csr", cert_dir / "tls.crt"
    ext = cert_dir / "ext.cnf"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
    )
    run(
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
        "-subj", "/CN=trainweave-e2e-ca", "-keyout", ca_key, "-out", ca_crt, capture=True,
    )  # fmt: skip
    run(
        "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", key, "-out", csr, capture=True,
    )  # fmt: skip
    run(
        "openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
        "-CAcreateserial", "-days", "30", "-extfile", ext, "-out", crt, capture=True,
    )  # fmt: skip
    return ca_crt.read_bytes()


def client_cert(pki: Path, subject: str, out_dir: Path, name: str) -> tuple[Path, Path]:
    """A client key and certificate for ``subject`` (``/O=group/CN=user``), signed by the CA in
    ``pki`` (ca.crt, ca.key); returns (key, certificate), written into out_dir as name.*."""
    key, csr, crt = out_dir / f"{name}.key", out_dir / f"{name}.csr", out_dir / f"{name}.crt"
    run("openssl", "genrsa", "-out", key, "2048", capture=True)
    run("openssl", "req", "-new", "-key", key, "-subj", subject, "-out", csr, capture=True)
    run(
        "openssl", "x509", "-req", "-in", csr, "-CA", pki / "ca.crt", "-CAkey", pki / "ca.key",
        "-CAcreateserial", "-days", "30", "-out", crt, capture=True,
    )  # fmt: skip
    return key, crt


# ---------------------------------------------------------------------------------------------
# processes we start (pid files, logs, how each was launched for `restart`)


def start_process(
    name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> int:
    logf = STATE / "logs" / f"{name}.log"
    logf.parent.mkdir(parents=True, exist_ok=True)
    with open(logf, "ab") as out:
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=str(cwd or STATE),
            start_new_session=True,
        )
    (STATE / "pids").mkdir(exist_ok=True)
    (STATE / "pids" / f"{name}.pid").write_text(str(p.pid))
    launch = {"argv": argv, "env": env or {}, "cwd": str(cwd or STATE)}
    (STATE / "pids" / f"{name}.json").write_text(json.dumps(launch))  # for `restart`
    log(f"started {name} (pid {p.pid}), log {logf}")
    return p.pid


def http_ok(url: str) -> bool:
    """GET url answers 200 (plain http: the engines' health endpoints)."""
    with urllib.request.urlopen(url, timeout=2) as r:
        return bool(r.status == 200)


def tcp_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0
