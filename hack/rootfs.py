"""Debian bookworm root filesystems as image layers: `debootstrap --variant=minbase` with a
package list, trimmed (apt caches and lists, docs but copyright, man, info, locales) and packed
once per list into ${XDG_CACHE_HOME:-~/.cache}/trainweave/images/rootfs-<key>/. The base layer
of the workload image (hack/images.py) and of the controller image (hack/images_controller.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time

from common import IMAGES_CACHE, output
from oci import Blob, add_tree, pack_layer

DEBIAN_SUITE, DEBIAN_MIRROR = "bookworm", "http://deb.debian.org/debian"
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


def keep_in_rootfs(name: str) -> bool:
    """The rootfs layer's filter (folders end in "/"): no apt caches or lists, device nodes,
    man, info, locales; of usr/share/doc only the folders and copyright files."""
    if name.startswith(ROOTFS_DROP) or any(name.startswith(p) and name != p for p in ROOTFS_EMPTY):
        return False
    return not name.startswith("usr/share/doc/") or name.endswith(("/", "/copyright"))


def rootfs_layer(packages: tuple[str, ...]) -> tuple[Blob, float]:
    """The debootstrap layer, built once per package list; returns it and its build seconds."""
    key = hashlib.sha256(repr((DEBIAN_SUITE, DEBIAN_MIRROR, packages, ROOTFS_REVISION)).encode())
    folder = IMAGES_CACHE / f"rootfs-{key.hexdigest()[:16]}"
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
    output([*cmd, DEBIAN_SUITE, tree, DEBIAN_MIRROR])
    print(f"images.py: debootstrap {' '.join(packages)}: {time.monotonic() - t0:.0f}s")
    blob = pack_layer(folder / "layer.tar.gz", lambda t: add_tree(t, tree, keep=keep_in_rootfs))
    shutil.rmtree(tree)
    seconds = time.monotonic() - t0
    m = {"digest": blob.digest, "size": blob.size, "diff_id": blob.diff_id, "seconds": seconds}
    meta.write_text(json.dumps(m))
    return blob, seconds
