#!/usr/bin/env python3
"""Container images of the real-containers tier, built offline here as OCI image archives.

No registry is reachable from this machine, so every image is built from pinned sources
(hack/versions.env) and written as an oci-layout tar (index.json + blobs) in pure Python
(hack/oci.py);
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
- workload: Debian bookworm `debootstrap --variant=minbase` + WORKLOAD_PACKAGES (hack/rootfs.py:
  layer 1, cached on its own, keyed by the package list) and examples/real/ at /opt/trainweave/
  (layer 2). openmpi-bin + openssh-server/-client were measured here (debootstrap, same mirror,
  back to back): +9 s (27 s -> 36 s) and +100 MB unpacked (235 -> 335 MB before trimming), under
  the ~60 s / ~150 MB budget, so they are in (sshd host keys are generated into the image). The
  rootfs layer drops apt caches/lists, docs (copyright kept), man, info, locales.
- controller: trainweave.local/controller:dev, deploy/Dockerfile's image built without Docker
  (hack/images_controller.py): bookworm minbase + python3 (3.11), a venv with the dependencies,
  the trainweave wheel in a top layer of its own.

Cache: ${XDG_CACHE_HOME:-~/.cache}/trainweave/images/<key>/image.tar, key = hash of
hack/versions.env, this file, hack/oci.py and the image's own inputs; a warm `build` only checks
files.
Usage: hack/images.py build [--out DIR] | load --address SOCKET [--ctr CTR] [--image SHORT]...
(load builds first what is stale)
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from common import HACK, IMAGES_CACHE, ROOT, VERSIONS, go_build_flags, go_module, output, versions
from images_controller import controller_image
from oci import (
    Blob,
    Entry,
    Image,
    add_entries,
    add_tree,
    is_cache_path,
    pack_layer,
    write_oci_archive,
)
from rootfs import PATH_ENV, rootfs_layer

EXAMPLES = ROOT / "examples" / "real"
CACHE = IMAGES_CACHE

PAUSE_NAMES = (
    "registry.k8s.io/pause:3.10",
    "registry.k8s.io/pause:3.10.2",
    "registry.k8s.io/pause:3.6",
)
ARGOEXEC_REPO = "quay.io/argoproj/argoexec"
WORKLOAD_NAME = "trainweave.local/workload:dev"
ARGO_MODULE = "github.com/argoproj/argo-workflows/v4"
WORKLOAD_PACKAGES = ("python3-minimal", "openmpi-bin", "openssh-server", "openssh-client")


# ---- inputs and keys ----


def tree_fingerprint(src: Path) -> bytes:
    """Relative paths, modes and contents of every file under `src` (b"" if it is missing)."""
    h = hashlib.sha256()
    for path in sorted(src.rglob("*")) if src.is_dir() else []:
        if is_cache_path(path.relative_to(src).as_posix()):
            continue
        h.update(f"{path.relative_to(src).as_posix()}\0{path.stat().st_mode:o}\0".encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.digest()


def key_of(*parts: bytes) -> str:
    """An image archive's cache key: versions.env, this recipe and the archive writer
    (hack/oci.py), and the image's own inputs."""
    h = hashlib.sha256()
    recipe = (Path(__file__).read_bytes(), (HACK / "oci.py").read_bytes())
    pins = json.dumps(versions(), sort_keys=True).encode()  # with an ARGO_VERSION override
    for part in (VERSIONS.read_bytes(), pins, *recipe, *parts):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()[:16]


def module_dir(module_at_version: str) -> Path:
    return Path(go_module(module_at_version)["Dir"])


# ---- the images ----


def pause_source() -> Path:
    return (
        module_dir(f"k8s.io/kubernetes@{versions()['KUBERNETES_VERSION']}")
        / "build/pause/linux/pause.c"
    )


def build_pause(work: Path) -> tuple[list[Blob], dict[str, Any]]:
    binary = work / "pause"
    version = f"v{PAUSE_NAMES[1].rsplit(':', 1)[1]}-kubernetes-{versions()['KUBERNETES_VERSION']}"
    output(["gcc", *PAUSE_CFLAGS, f"-DVERSION={version}", "-o", binary, pause_source()])
    output(["strip", binary])
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
    info = go_module(f"{ARGO_MODULE}@{version}")
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
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": go_build_flags()}
    output(["go", "mod", "tidy"], cwd=w, env=env)
    out = work / "argoexec"
    output(
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


def build_workload(work: Path) -> tuple[list[Blob], dict[str, Any]]:
    base, seconds = rootfs_layer(WORKLOAD_PACKAGES)
    print(f"images.py: workload base layer {base.digest[:19]} ({seconds:.0f}s when built)")
    opt = [Entry("opt", mode=0o755), Entry("opt/trainweave", mode=0o755)]

    def fill(tar: tarfile.TarFile) -> None:
        add_entries(tar, opt)
        add_tree(tar, EXAMPLES, "opt/trainweave", keep=lambda n: not is_cache_path(n.rstrip("/")))

    examples = pack_layer(work / "examples.tar.gz", fill)
    config = {
        "Env": [PATH_ENV, "LANG=C.UTF-8", "PYTHONUNBUFFERED=1"],
        "Cmd": ["python3"],
        "WorkingDir": "/opt/trainweave",
    }
    return [base, examples], config


def images() -> list[Image]:
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
            if args.image and image.short not in args.image:
                continue
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
    build.add_argument(
        "--image", action="append", help="only this one (short name: pause, controller, ...)"
    )
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
