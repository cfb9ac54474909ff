"""The controller image, trainweave.local/controller:dev, built offline by hack/images.py.

deploy/Dockerfile's image without a Docker engine or a registry: Python 3.11, the trainweave wheel
and its runtime dependencies plus prometheus-client in a virtualenv, user 65532, ENTRYPOINT
["trainweave"], CMD ["controller"]. deploy/deployment.yaml runs it (tests/e2e/test_real_deploy.py).

- layer 1: Debian bookworm `debootstrap --variant=minbase` + CONTROLLER_PACKAGES (Debian's
  python3 is 3.11, the Dockerfile's python:3.11-slim), rootfs.rootfs_layer's cache.
- layer 2: /opt/venv, made by the rootfs's own `python3 -m venv` (chroot) and filled by its own
  pip, `--no-index --no-deps`, from the wheels the host's pip downloaded from PyPI for cp311 on
  manylinux up to bookworm's glibc 2.36 (the dependency closure of the trainweave wheel and
  prometheus-client); the user and group 65532 in /etc/passwd and /etc/group (the Dockerfile's
  `useradd --uid 65532`). Cached by pyproject.toml (and the base layer): a code change keeps it.
- layer 3: the trainweave wheel, built on the host from a copy of what the Dockerfile copies
  (pyproject.toml, README.md and the package folders), installed by the venv's pip with
  `--no-deps --root`, byte-compiled for its final paths. Only this layer follows the sources.

The rootfs of layers 1+2 is kept next to layer 2's cache (tree/) for layer 3's chroot pip.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import time
from email.parser import Parser
from pathlib import Path
from typing import Any
from zipfile import ZipFile

from common import IMAGES_CACHE, ROOT, output
from oci import Blob, Entry, Image, add_entries, add_tree, is_cache_path, pack_layer
from rootfs import PATH_ENV, rootfs_layer

CONTROLLER_NAME = "trainweave.local/controller:dev"
CONTROLLER_PACKAGES = ("python3", "python3-venv")
# what deploy/Dockerfile COPYs into its build stage
PROJECT_FILES = ("pyproject.toml", "README.md")
PROJECT_DIRS = ("trainweave", "adapters", "integrations", "workflows")
EXTRA_REQUIREMENTS = ("prometheus-client",)  # the Dockerfile's `pip wheel . prometheus-client`
VENV = "/opt/venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
# bookworm's glibc is 2.36; pip takes an explicit --platform literally, so every manylinux tag
# the target accepts is named (PEP 600 2_17..2_36 and its manylinux2014 alias)
WHEEL_TARGET = (
    "--only-binary=:all:",
    "--python-version=3.11",
    "--implementation=cp",
    "--abi=cp311",
    *(f"--platform=manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)),
    "--platform=manylinux2014_x86_64",
)
USER_ID = 65532
PIP = ROOT / ".venv" / "bin" / "pip"  # the host's pip (PyPI): wheels for the image
# Bump when the venv layer's recipe changes (the key is otherwise pyproject.toml + layer 1).
DEPS_REVISION = 1


def sources_fingerprint() -> bytes:
    """pyproject.toml, README.md and every package file (paths, modes, contents)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    paths = [ROOT / f for f in PROJECT_FILES]
    for d in PROJECT_DIRS:
        paths += sorted(p for p in (ROOT / d).rglob("*") if p.is_file())
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        if not is_cache_path(rel):
            h.update(f"{rel}\0{path.stat().st_mode:o}\0".encode() + path.read_bytes())
    return h.digest()


def build_wheel(work: Path) -> Path:
    """The trainweave wheel, from a copy of the sources (the tree gets no build/ or egg-info)."""
    src, out = work / "src", work / "wheel"
    src.mkdir()
    for f in PROJECT_FILES:
        shutil.copyfile(ROOT / f, src / f)
    for d in PROJECT_DIRS:
        shutil.copytree(ROOT / d, src / d, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    output([PIP, "wheel", "--no-deps", "--quiet", "--wheel-dir", out, src])
    (wheel,) = out.glob("trainweave-*.whl")
    return wheel


def requirements(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist (no extras' requirements) and EXTRA_REQUIREMENTS."""
    with ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(z.read(name).decode())
    reqs = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    return [*reqs, *EXTRA_REQUIREMENTS]


def chroot(tree: Path, *cmd: str) -> str:
    return output(["chroot", tree, *cmd], env={"PATH": PATH_ENV.removeprefix("PATH="), "LANG": "C"})


def _user_lines(tree: Path) -> list[Entry]:
    """/etc/passwd and /etc/group of `tree` with the Dockerfile's user 65532 (written back)."""
    out = []
    for name, line in (
        ("etc/passwd", f"trainweave:x:{USER_ID}:{USER_ID}::/nonexistent:/usr/sbin/nologin\n"),
        ("etc/group", f"trainweave:x:{USER_ID}:\n"),
    ):
        text = (tree / name).read_text()
        if line not in text:
            text += line
            (tree / name).write_text(text)
        out.append(Entry(name, text.encode()))
    return out


def deps_layer(base: Blob, wheel: Path, work: Path) -> tuple[Blob, Path, float]:
    """Layer 2 (/opt/venv with the dependencies, user 65532), cached by pyproject.toml and the
    base layer; returns it, the rootfs of layers 1+2 and its build seconds."""
    key = hashlib.sha256(
        repr((base.digest, (ROOT / "pyproject.toml").read_bytes(), DEPS_REVISION)).encode()
    )
    folder = IMAGES_CACHE / f"controller-deps-{key.hexdigest()[:16]}"
    meta, tree = folder / "layer.json", folder / "tree"
    if meta.exists() and tree.is_dir():
        m = json.loads(meta.read_text())
        blob = Blob(folder / "layer.tar.gz", m["digest"], m["size"], m["diff_id"])
        return blob, tree, float(m["seconds"])
    t0 = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    tree.mkdir(parents=True)
    output(["tar", "-xzf", base.path, "--numeric-owner", "-C", tree])
    wheels = work / "wheels"
    output([PIP, "download", "--quiet", "--dest", wheels, *WHEEL_TARGET, *requirements(wheel)])
    t_dl = time.monotonic() - t0
    chroot(tree, "python3", "-m", "venv", VENV)
    shutil.copytree(wheels, tree / "tmp" / "wheels")
    pip = [f"{VENV}/bin/pip", "install", "--no-cache-dir", "--no-index", "--no-deps"]
    chroot(tree, *pip, *(f"/tmp/wheels/{w.name}" for w in sorted(wheels.glob("*.whl"))))
    shutil.rmtree(tree / "tmp" / "wheels")
    frozen = chroot(tree, f"{VENV}/bin/pip", "freeze", "--all")
    users = _user_lines(tree)

    def fill(tar: tarfile.TarFile) -> None:
        add_entries(tar, users)
        add_tree(tar, tree / "opt", "opt")

    blob = pack_layer(folder / "layer.tar.gz", fill)
    seconds = time.monotonic() - t0
    print(f"images.py: controller venv (download {t_dl:.0f}s): {' '.join(frozen.split())}")
    m = {"digest": blob.digest, "size": blob.size, "diff_id": blob.diff_id, "seconds": seconds}
    meta.write_text(json.dumps({**m, "frozen": frozen.split()}))
    return blob, tree, seconds


def build_controller(work: Path) -> tuple[list[Blob], dict[str, Any]]:
    t0 = time.monotonic()
    wheel = build_wheel(work)
    t_wheel = time.monotonic() - t0
    base, base_s = rootfs_layer(CONTROLLER_PACKAGES)
    deps, tree, deps_s = deps_layer(base, wheel, work)
    t1 = time.monotonic()
    stage = tree / "tmp" / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copyfile(wheel, tree / "tmp" / wheel.name)
    try:
        pip = [f"{VENV}/bin/pip", "install", "--no-cache-dir", "--no-index", "--no-deps"]
        chroot(
            tree,
            *pip,
            "--no-compile",
            "--no-warn-script-location",
            "--root",
            "/tmp/stage",
            f"/tmp/{wheel.name}",
        )
        # .pyc files name their final paths (the rootfs is read-only in the pod: no cache there)
        chroot(
            tree, "python3", "-m", "compileall", "-q", "-s", "/tmp/stage", "-p", "/", "/tmp/stage"
        )
        top = pack_layer(work / "trainweave.tar.gz", lambda t: add_tree(t, stage))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        (tree / "tmp" / wheel.name).unlink(missing_ok=True)
    print(
        f"images.py: controller layers: base {base_s:.0f}s when built, venv {deps_s:.0f}s when "
        f"built, wheel {t_wheel:.1f}s, trainweave layer {time.monotonic() - t1:.1f}s"
    )
    config = {
        "Env": [f"PATH={VENV}/bin:" + PATH_ENV.removeprefix("PATH="), "LANG=C.UTF-8"],
        "Entrypoint": ["trainweave"],
        "Cmd": ["controller"],
        "User": str(USER_ID),
    }
    return [base, deps, top], config


def controller_image() -> Image:
    return Image("controller", (CONTROLLER_NAME,), sources_fingerprint, build_controller)
