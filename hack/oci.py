"""OCI image archives in pure Python: gzip layers from value entries or host trees, and an
oci-layout tar (index.json + blobs) naming one image, as `ctr images import` reads it. No
network, no clock (mtime 0, root-owned value entries): the same inputs give the same digests.
hack/images.py and hack/images_controller.py build the real node's images with it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PLATFORM = {"architecture": "amd64", "os": "linux"}

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
ANNOTATION_REF = "org.opencontainers.image.ref.name"
ANNOTATION_CONTAINERD = "io.containerd.image.name"


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


@dataclass(frozen=True)
class Image:
    """What to build: a short name, the image names, the key inputs, the build function (a work
    folder in, the layers and the image config's `config` object out)."""

    short: str
    names: tuple[str, ...]
    inputs: Callable[[], bytes]
    build: Callable[[Path], tuple[list[Blob], dict[str, Any]]]


def is_cache_path(rel: str) -> bool:
    """Caches next to source files stay out of images and keys: __pycache__, *.pyc, dot folders
    (.mypy_cache)."""
    parts = rel.split("/")
    return "__pycache__" in parts or rel.endswith(".pyc") or any(p.startswith(".") for p in parts)
