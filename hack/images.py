#!/usr/bin/env python3
"""Container images of the real-containers tier, built offline here as OCI image archives.

No registry is reachable from this machine, so every image is built from pinned sources
(hack/versions.env) and written as an oci-layout tar (index.json + blobs) in pure Python;
`ctr -n k8s.io images import --all-platforms FILE` names it from the index's
`io.containerd.image.name` / `org.opencontainers.image.ref.name` annotations.

- pause: build/pause/linux/pause.c of k8s.io/kubernetes@KUBERNETES_VERSION (the module folder
  `go mod download -json` gives, as hack/build.sh obtains Kubernetes), compiled with Debian's
  gcc `-Os -Wall -Werror -static` and stripped, laid out like build/pause/Dockerfile (/pause,
  USER 65535:65535). Kubernetes v1.36.4 pins pause 3.10.2 (build/pause/Makefile TAG, kubeadm's
  PauseVersion), so the image carries that tag, the asked-for 3.10, and 3.6: the default
  `sandbox_image` of Debian bookworm's containerd 1.6.20, so an unconfigured CRI finds it locally.
- argoexec: `CGO_ENABLED=0 go build ./cmd/argoexec` of github.com/argoproj/argo-workflows/v4 at
  ARGO_WORKFLOWS_VERSION through a wrapper module (hack/build.sh's `wrapped`; the module is
  copied and `replace`d in, as build.sh's argo_cli does, because the module zip lacks upstream's
  symlink workflow/executor/osspecific/signal_linux.go -> signal_darwin.go and linux builds fail
  with `undefined: Setpgid` without it), with upstream's Makefile ldflags (version, buildDate,
  gitTag, gitTreeState, gitCommit = the tag's commit from the proxy's Origin; `-extldflags
  -static`; no build tags) plus -s -w as hack/build.sh. Layout of upstream's Dockerfile `argoexec` target on distroless/static: /bin/argoexec,
  ENTRYPOINT ["argoexec"], hack/ssh_known_hosts and hack/nsswitch.conf of the module,
  /etc/mime.types, CA certificates, /tmp (1777), passwd/group. /var/run/argo is not in the
  image: the controller mounts an emptyDir there and `argoexec init` copies itself into it,
  finding itself on PATH.
- workload: Debian bookworm `debootstrap --variant=minbase` + WORKLOAD_PACKAGES (layer 1, cached
  on its own, keyed by the package list) and examples/real/ at /opt/trainweave/ (layer 2).
  openmpi-bin + openssh-server/-client were measured here (debootstrap, same mirror, back to
  back): +9 s (27 s -> 36 s) and +100 MB unpacked (235 -> 335 MB before trimming), under the
  ~60 s / ~150 MB budget, so they are in (sshd host keys are generated into the image). The rootfs layer drops apt caches/lists, docs (copyright kept), man, info, locales.
- controller: trainweave.local/controller:dev, deploy/Dockerfile's image built without Docker
  (hack/images_controller.py): bookworm minbase + python3 (3.11), a venv with the dependencies,
  the trainweave wheel in a top layer of its own.

Cache: ${XDG_CACHE_HOME:-~/.cache}/trainweave/images/<key>/image.tar, key = hash of
hack/versions.env, this file and the image's own inputs; a warm `build` only checks files.
Usage: hack/images.py build [--out DIR] | load --address SOCKET [--ctr CTR] [--image SHORT]...
(load builds first what is stale)
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ROOT / "hack" / "versions.env"
EXAMPLES = ROOT / "examples" / "real"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave" / "images"

PAUSE_NAMES = (
    "registry.k8s.io/pause:3.10",
    "registry.k8s.io/pause:3.10.2",
    "registry.k8s.io/pause:3.6",
)
ARGOEXEC_REPO = "quay.io/argoproj/argoexec"
WORKLOAD_NAME = "trainweave.local/workload:dev"
ARGO_MODULE = "github.com/argoproj/argo-workflows/v4"
DEBIAN_SUITE, DEBIAN_MIRROR = "bookworm", "http://deb.debian.org/debian"
WORKLOAD_PACKAGES = ("python3-minimal", "openmpi-bin", "openssh-server", "openssh-client")
# Bump when the rootfs trimming (ROOTFS_DROP) or the debootstrap call changes: a new base layer.
ROOTFS_REVISION = 1
ROOTFS_DROP = ("usr/share/man/", "usr/share/info/")
ROOTFS_EMPTY = (
    "dev/",
    "proc/",
    "sys/",
    "run/",
    "tmp/",
    "usr/share/locale/",
    "var/cache/apt/",
    "var/lib/apt/lists/",
)
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PLATFORM = {"architecture": "amd64", "os": "linux"}

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
ANNOTATION_REF = "org.opencontainers.image.ref.name"
ANNOTATION_CONTAINERD = "io.containerd.image.name"


# ---- OCI archive writer (pure: files in, files out; no network, no clock) ----


@dataclass(frozen=True)
class Blob:
    """A gzip layer on disk: `digest`/`size` of the compressed file, `diff_id` of the tar."""

    path: Path
    digest: str
    size: int
    diff_id: str


@dataclass(frozen=True)
class Entry:
    """One file or directory of a layer built from values: `data` None is a directory."""

    path: str
    data: bytes | None = None
    mode: int = 0o644


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def pack_layer(dest: Path, fill: Callable[[tarfile.TarFile], None]) -> Blob:
    """Write the tar that `fill` adds to, gzip it to `dest`; return its digests."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    raw = dest.with_name(dest.name + ".tar.tmp")
    with tarfile.open(raw, "w", format=tarfile.PAX_FORMAT) as tar:
        fill(tar)
    diff = hashlib.sha256()
    tmp = dest.with_name(dest.name + ".tmp")
    with (
        raw.open("rb") as src,
        tmp.open("wb") as out,
        gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz,
    ):
        while chunk := src.read(1 << 20):
            diff.update(chunk)
            gz.write(chunk)
    raw.unlink()
    tmp.replace(dest)
    return Blob(dest, _sha256_file(dest), dest.stat().st_size, "sha256:" + diff.hexdigest())


def add_entries(tar: tarfile.TarFile, entries: Iterable[Entry]) -> None:
    """Add value entries owned by root with mtime 0 (reproducible digests)."""
    for e in entries:
        info = tarfile.TarInfo(e.path.strip("/"))
        info.mode = e.mode
        if e.data is None:
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        else:
            info.size = len(e.data)
            tar.addfile(info, io.BytesIO(e.data))


def add_tree(
    tar: tarfile.TarFile, src: Path, prefix: str = "", keep: Callable[[str], bool] = lambda _: True
) -> None:
    """Add the contents of `src` under `prefix` (no leading slash), owners and modes kept."""
    for child in sorted(src.iterdir()) if src.is_dir() else []:
        name = f"{prefix.strip('/')}/{child.name}".lstrip("/")

        def only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            return info if keep(info.name + ("/" if info.isdir() else "")) else None

        tar.add(child, arcname=name, filter=only)


def _put(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_oci_archive(
    out: Path, layers: Sequence[Blob], config: dict[str, Any], names: Sequence[str]
) -> str:
    """Write an oci-layout tar of one image named `names`; return the manifest digest.

    `config` is the image config's `config` object (Env, Entrypoint, Cmd, User, ...)."""
    image_config = _json(
        {
            **PLATFORM,
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [b.diff_id for b in layers]},
            "history": [{"created_by": "hack/images.py"} for _ in layers],
        }
    )
    config_digest = "sha256:" + hashlib.sha256(image_config).hexdigest()
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": MT_MANIFEST,
            "config": {"mediaType": MT_CONFIG, "digest": config_digest, "size": len(image_config)},
            "layers": [{"mediaType": MT_LAYER, "digest": b.digest, "size": b.size} for b in layers],
        }
    )
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = {
        "schemaVersion": 2,
        "mediaType": MT_INDEX,
        "manifests": [
            {
                "mediaType": MT_MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest),
                "platform": PLATFORM,
                "annotations": {ANNOTATION_REF: name, ANNOTATION_CONTAINERD: name},
            }
            for name in names
        ],
    }
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        _put(tar, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        _put(tar, "index.json", _json(index))
        for digest, data in ((config_digest, image_config), (manifest_digest, manifest)):
            _put(tar, "blobs/sha256/" + digest.removeprefix("sha256:"), data)
        for b in dict.fromkeys(layers):
            info = tarfile.TarInfo("blobs/sha256/" + b.digest.removeprefix("sha256:"))
            info.size, info.mode = b.size, 0o644
            with b.path.open("rb") as f:
                tar.addfile(info, f)
    tmp.replace(out)
    return manifest_digest


# ---- inputs and keys ----


def versions() -> dict[str, str]:
    """hack/versions.env as a dict (KEY=value lines)."""
    pairs = (line.split("=", 1) for line in VERSIONS.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs if not k.lstrip().startswith("#")}


def tree_fingerprint(src: Path) -> bytes:
    """Relative paths, modes and contents of every file under `src` (b"" if it is missing)."""
    h = hashlib.sha256()
    for path in sorted(src.rglob("*")) if src.is_dir() else []:
        if _skip_example(path.relative_to(src).as_posix()):
            continue
        h.update(f"{path.relative_to(src).as_posix()}\0{path.stat().st_mode:o}\0".encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.digest()


def _skip_example(rel: str) -> bool:
    """Caches next to the example files stay out: __pycache__, *.pyc, dot folders (.mypy_cache)."""
    parts = rel.split("/")
    return "__pycache__" in parts or rel.endswith(".pyc") or any(p.startswith(".") for p in parts)


def key_of(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in (VERSIONS.read_bytes(), Path(__file__).read_bytes(), *parts):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()[:16]


def run(
    cmd: Sequence[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, check=True, text=True, stdout=subprocess.PIPE
    )
    return out.stdout


def module_info(module_at_version: str) -> dict[str, Any]:
    """`go mod download -json`: Dir (GOMODCACHE folder, hack/build.sh's `moddir`), Origin."""
    info: dict[str, Any] = json.loads(
        run(["go", "mod", "download", "-json", module_at_version], cwd=CACHE)
    )
    if info.get("Error"):
        raise SystemExit(f"images.py: go mod download {module_at_version}: {info['Error']}")
    return info


def module_dir(module_at_version: str) -> Path:
    return Path(module_info(module_at_version)["Dir"])


# ---- the images ----


@dataclass(frozen=True)
class Image:
    """What to build: a short name, the image names, the key inputs, the build function."""

    short: str
    names: tuple[str, ...]
    inputs: Callable[[], bytes]
    build: Callable[[Path], tuple[list[Blob], dict[str, Any]]]


def pause_source() -> Path:
    return (
        module_dir(f"k8s.io/kubernetes@{versions()['KUBERNETES_VERSION']}")
        / "build/pause/linux/pause.c"
    )


def build_pause(work: Path) -> tuple[list[Blob], dict[str, Any]]:
    binary = work / "pause"
    version = f"v{PAUSE_NAMES[1].rsplit(':', 1)[1]}-kubernetes-{versions()['KUBERNETES_VERSION']}"
    run(["gcc", *PAUSE_CFLAGS, f"-DVERSION={version}", "-o", binary, pause_source()])
    run(["strip", binary])
    blob = pack_layer(
        work / "pause.tar.gz",
        lambda t: add_entries(t, [Entry("pause", binary.read_bytes(), 0o755)]),
    )
    return [blob], {"Entrypoint": ["/pause"], "User": "65535:65535", "Env": [PATH_ENV]}


# build/pause/Makefile's CFLAGS (VERSION is added per build); the binary is stripped after, as there.
PAUSE_CFLAGS = ("-Os", "-Wall", "-Werror", "-static")
# Symlinks of the Argo repository that its module zip lacks (link -> target, as upstream has them).
ARGO_ZIP_SYMLINKS = {"workflow/executor/osspecific/signal_linux.go": "signal_darwin.go"}
ARGOEXEC_HOST_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/mime.types")
# distroless/static's users and groups (the argoexec target's base)
PASSWD = (
    b"root:x:0:0:root:/root:/sbin/nologin\n"
    b"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
    b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
)
GROUP = b"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"


def argoexec_inputs() -> bytes:
    return b"".join(Path(p).read_bytes() for p in ARGOEXEC_HOST_FILES)


def build_argoexec(work: Path) -> tuple[list[Blob], dict[str, Any]]:
    version = versions()["ARGO_WORKFLOWS_VERSION"]
    info = module_info(f"{ARGO_MODULE}@{version}")
    mod = Path(info["Dir"])
    # Module zips drop symlinks; upstream's signal_linux.go is one, so the module is copied (as
    # hack/build.sh's argo_cli does), the links are put back and the copy is `replace`d in.
    w, src = work / "module", work / "module" / "src"
    shutil.copytree(mod, src)
    for link, target in ARGO_ZIP_SYMLINKS.items():
        (src / link).parent.chmod(0o755)
        (src / link).symlink_to(target)
    require = f"require {ARGO_MODULE} {version}\n\nreplace {ARGO_MODULE} => ./src\n"
    (w / "go.mod").write_text(f"module trainweave.local/argoexecbin\n\ngo 1.26.0\n\n{require}")
    tools = f'//go:build tools\n\npackage tools\n\nimport _ "{ARGO_MODULE}/cmd/argoexec"\n'
    (w / "tools.go").write_text(tools)
    shutil.copyfile(mod / "go.sum", w / "go.sum")
    stamp = [f"version={version}", "buildDate=1970-01-01T00:00:00Z", f"gitTag={version}"]
    stamp.append("gitTreeState=clean")
    # The tag's commit as the proxy recorded it: with it `argoexec version` says just the tag.
    if commit := info.get("Origin", {}).get("Hash"):
        stamp.append(f"gitCommit={commit}")
    ldflags = " ".join(
        ["-s -w", *(f"-X {ARGO_MODULE}.{kv}" for kv in stamp), "-extldflags -static"]
    )
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-trimpath -buildvcs=false"}
    run(["go", "mod", "tidy"], cwd=w, env=env)
    out = work / "argoexec"
    run(
        ["go", "build", "-ldflags", ldflags, "-o", out, f"{ARGO_MODULE}/cmd/argoexec"],
        cwd=w,
        env=env,
    )
    entries = [
        *(Entry(d) for d in ("bin", "etc", "etc/ssh", "etc/ssl", "etc/ssl/certs", "home", "root")),
        Entry("home/nonroot"),
        Entry("tmp", mode=0o1777),
        Entry("bin/argoexec", out.read_bytes(), 0o755),
        Entry("etc/passwd", PASSWD),
        Entry("etc/group", GROUP),
        Entry("etc/nsswitch.conf", (mod / "hack/nsswitch.conf").read_bytes()),
        Entry("etc/ssh/ssh_known_hosts", (mod / "hack/ssh_known_hosts").read_bytes()),
        *(Entry(p.lstrip("/"), Path(p).read_bytes()) for p in ARGOEXEC_HOST_FILES),
    ]
    blob = pack_layer(work / "argoexec.tar.gz", lambda t: add_entries(t, entries))
    env_cfg = [PATH_ENV, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]
    return [blob], {"Entrypoint": ["argoexec"], "Env": env_cfg}


def keep_in_rootfs(name: str) -> bool:
    """The rootfs layer's filter (folders end in "/"): no apt caches or lists, device nodes,
    man, info, locales; of usr/share/doc only the folders and copyright files."""
    if name.startswith(ROOTFS_DROP) or any(name.startswith(p) and name != p for p in ROOTFS_EMPTY):
        return False
    return not name.startswith("usr/share/doc/") or name.endswith(("/", "/copyright"))


def rootfs_layer(packages: tuple[str, ...] = WORKLOAD_PACKAGES) -> tuple[Blob, float]:
    """The debootstrap layer, built once per package list; returns it and its build seconds."""
    key = hashlib.sha256(repr((DEBIAN_SUITE, DEBIAN_MIRROR, packages, ROOTFS_REVISION)).encode())
    folder = CACHE / f"rootfs-{key.hexdigest()[:16]}"
    meta = folder / "layer.json"
    if meta.exists():
        m = json.loads(meta.read_text())
        blob = Blob(folder / "layer.tar.gz", m["digest"], m["size"], m["diff_id"])
        return blob, float(m["seconds"])
    t0 = time.monotonic()
    tree = folder / "rootfs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cmd = ["debootstrap", "--variant=minbase", "--include=" + ",".join(packages)]
    run([*cmd, DEBIAN_SUITE, tree, DEBIAN_MIRROR])
    print(f"images.py: debootstrap {' '.join(packages)}: {time.monotonic() - t0:.0f}s")
    blob = pack_layer(folder / "layer.tar.gz", lambda t: add_tree(t, tree, keep=keep_in_rootfs))
    shutil.rmtree(tree)
    seconds = time.monotonic() - t0
    m = {"digest": blob.digest, "size": blob.size, "diff_id": blob.diff_id, "seconds": seconds}
    meta.write_text(json.dumps(m))
    return blob, seconds


def build_workload(work: Path) -> tuple[list[Blob], dict[str, Any]]:
    base, seconds = rootfs_layer()
    print(f"images.py: workload base layer {base.digest[:19]} ({seconds:.0f}s when built)")
    opt = [Entry("opt", mode=0o755), Entry("opt/trainweave", mode=0o755)]

    def fill(tar: tarfile.TarFile) -> None:
        add_entries(tar, opt)
        add_tree(tar, EXAMPLES, "opt/trainweave", keep=lambda n: not _skip_example(n.rstrip("/")))

    examples = pack_layer(work / "examples.tar.gz", fill)
    config = {
        "Env": [PATH_ENV, "LANG=C.UTF-8", "PYTHONUNBUFFERED=1"],
        "Cmd": ["python3"],
        "WorkingDir": "/opt/trainweave",
    }
    return [base, examples], config


def images() -> list[Image]:
    from images_controller import controller_image  # it imports this module's helpers

    v = versions()
    return [
        Image("pause", PAUSE_NAMES, lambda: pause_source().read_bytes(), build_pause),
        Image(
            "argoexec",
            (f"{ARGOEXEC_REPO}:{v['ARGO_WORKFLOWS_VERSION']}",),
            argoexec_inputs,
            build_argoexec,
        ),
        Image("workload", (WORKLOAD_NAME,), lambda: tree_fingerprint(EXAMPLES), build_workload),
        controller_image(),
    ]


# ---- commands ----


def archive_of(image: Image) -> Path:
    return (
        CACHE
        / key_of(image.short.encode(), "\n".join(image.names).encode(), image.inputs())
        / "image.tar"
    )


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def build_one(image: Image, out: Path | None) -> Path:
    """Build `image` unless its archive is cached; print build seconds and size either way."""
    archive = archive_of(image)
    meta = archive.with_name("build.json")
    if archive.exists() and meta.exists():
        seconds, state = float(json.loads(meta.read_text())["seconds"]), "cached, built in"
    else:
        t0 = time.monotonic()
        work = archive.parent / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        layers, config = image.build(work)
        digest = write_oci_archive(archive, layers, config, image.names)
        shutil.rmtree(work)
        seconds, state = time.monotonic() - t0, "built in"
        meta.write_text(json.dumps({"names": image.names, "manifest": digest, "seconds": seconds}))
    size = _mb(archive.stat().st_size)
    print(f"images.py: {image.short:9} {state} {seconds:.1f}s, {size}: {', '.join(image.names)}")
    print(f"images.py: {'':9} {archive}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(archive, out / f"{image.short}.tar")
    return archive


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """One images.py at a time on this cache: a concurrent run (node.py up in another test
    session) would otherwise remove the work folder of the same key under this one."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def cmd_build(args: argparse.Namespace) -> None:
    t0 = time.monotonic()
    with cache_lock():
        for image in images():
            build_one(image, args.out)
    print(f"images.py: images ready in {CACHE} (total {time.monotonic() - t0:.1f}s)")


def cmd_load(args: argparse.Namespace) -> None:
    """Import every image into containerd; builds first what its inputs no longer match (an
    edited examples/real/ re-packs only the workload's last layer)."""
    ctr = [args.ctr, "--address", args.address, "--namespace", "k8s.io"]
    with cache_lock():
        for image in images():
            if args.image and image.short not in args.image:
                continue
            archive = build_one(image, None)
            cmd = [*ctr, "images", "import", "--all-platforms", str(archive)]
            subprocess.run(cmd, check=True)
    subprocess.run([*ctr, "images", "ls"], check=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="hack/images.py", description=__doc__.splitlines()[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or reuse) every image archive")
    build.add_argument("--out", type=Path, help="also copy the archives here as <short>.tar")
    build.set_defaults(func=cmd_build)
    load = sub.add_parser(
        "load",
        help="build if needed, then import every archive into a containerd (namespace k8s.io)",
    )
    load.add_argument("--address", required=True, help="containerd's socket")
    load.add_argument("--ctr", default="ctr", help="the ctr binary")
    load.add_argument(
        "--image", action="append", help="only this one (short name: pause, controller, ...)"
    )
    load.set_defaults(func=cmd_load)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
