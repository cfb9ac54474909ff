"""hack/oci.py's OCI archive writer: a tiny image from a temp dir, read back as containerd
reads it (index.json -> manifest -> config + layers), digests and names checked; and
hack/rootfs.py's trimming of the Debian base layer."""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.unit.hack_scripts import load

oci = load("oci")
rootfs = load("rootfs")
NAMES = ("example.local/tiny:1", "example.local/tiny:latest")


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Two layers (a host tree with a skipped cache file, value entries), written and read back."""
    tmp = tmp_path_factory.mktemp("tiny")
    tree = tmp / "tree"
    (tree / "app" / "__pycache__").mkdir(parents=True)
    (tree / "app" / "main.py").write_text("print(1)\n")
    (tree / "app" / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")

    def fill_tree(tar: tarfile.TarFile) -> None:
        oci.add_tree(tar, tree, "opt/x", keep=lambda n: "__pycache__" not in n)

    def fill_values(tar: tarfile.TarFile) -> None:
        entries = [oci.Entry("bin"), oci.Entry("bin/hello", b"#!/bin/sh\necho hi\n", 0o755)]
        oci.add_entries(tar, entries)

    layers = [
        oci.pack_layer(tmp / "a.tar.gz", fill_tree),
        oci.pack_layer(tmp / "b.tar.gz", fill_values),
    ]
    out = tmp / "image.tar"
    oci.write_oci_archive(out, layers, {"Entrypoint": ["/bin/hello"]}, NAMES)
    with tarfile.open(out) as tar:
        return {m.name: _read(tar, m) for m in tar.getmembers() if m.isfile()}


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    """A regular file's bytes (``extractfile`` is None only for other kinds of member)."""
    f = tar.extractfile(member)
    assert f is not None
    return f.read()


def _blob(files: dict[str, bytes], digest: str) -> bytes:
    return files["blobs/sha256/" + digest.removeprefix("sha256:")]


def _manifest(files: dict[str, bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    index = json.loads(files["index.json"])
    manifest = json.loads(_blob(files, index["manifests"][0]["digest"]))
    return manifest, json.loads(_blob(files, manifest["config"]["digest"]))


def test_layout_file_and_every_blob_named_by_its_digest(archive: dict[str, bytes]) -> None:
    assert json.loads(archive["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    blobs = {k: v for k, v in archive.items() if k.startswith("blobs/")}
    assert len(blobs) == 4  # config, manifest, two layers
    assert all(name == "blobs/sha256/" + _sha(data)[7:] for name, data in blobs.items())


def test_index_names_the_image_for_containerd_and_oci(archive: dict[str, bytes]) -> None:
    index = json.loads(archive["index.json"])
    assert index["mediaType"] == oci.MT_INDEX
    annotations = [m["annotations"] for m in index["manifests"]]
    assert annotations == [{oci.ANNOTATION_REF: n, oci.ANNOTATION_CONTAINERD: n} for n in NAMES]
    assert {m["digest"] for m in index["manifests"]} == {index["manifests"][0]["digest"]}
    for m in index["manifests"]:
        assert m["platform"] == {"architecture": "amd64", "os": "linux"}
        assert m["size"] == len(_blob(archive, m["digest"]))


def test_manifest_sizes_and_config(archive: dict[str, bytes]) -> None:
    manifest, config = _manifest(archive)
    assert manifest["mediaType"] == oci.MT_MANIFEST
    assert manifest["config"]["size"] == len(_blob(archive, manifest["config"]["digest"]))
    for layer in manifest["layers"]:
        assert layer["mediaType"] == oci.MT_LAYER
        assert layer["size"] == len(_blob(archive, layer["digest"]))
    assert config["config"] == {"Entrypoint": ["/bin/hello"]}
    assert (config["os"], config["architecture"]) == ("linux", "amd64")


def test_diff_ids_are_digests_of_the_uncompressed_layers(archive: dict[str, bytes]) -> None:
    manifest, config = _manifest(archive)
    raw = [gzip.decompress(_blob(archive, layer["digest"])) for layer in manifest["layers"]]
    assert config["rootfs"] == {"type": "layers", "diff_ids": [_sha(r) for r in raw]}


def _members(layer: bytes) -> dict[str, tarfile.TarInfo]:
    import io

    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer))) as tar:
        return {m.name: m for m in tar.getmembers()}


@pytest.mark.parametrize(
    ("layer", "expected"),
    [
        pytest.param(0, {"opt/x/app", "opt/x/app/main.py"}, id="tree-under-prefix-filtered"),
        pytest.param(1, {"bin", "bin/hello"}, id="value-entries"),
    ],
)
def test_layer_contents(archive: dict[str, bytes], layer: int, expected: set[str]) -> None:
    manifest, _ = _manifest(archive)
    members = _members(_blob(archive, manifest["layers"][layer]["digest"]))
    assert set(members) == expected


def test_value_entries_are_root_owned_at_epoch(archive: dict[str, bytes]) -> None:
    """Layer 1 (value entries): the directory is a directory, the file keeps its mode, and every
    entry is uid 0, gid 0, mtime 0."""
    manifest, _ = _manifest(archive)
    members = _members(_blob(archive, manifest["layers"][1]["digest"]))
    assert members["bin/hello"].mode == 0o755 and members["bin"].isdir()
    assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, 0)}


def test_value_layers_are_reproducible(tmp_path: Path) -> None:
    def fill(tar: tarfile.TarFile) -> None:
        oci.add_entries(tar, [oci.Entry("f", b"x")])

    first = oci.pack_layer(tmp_path / "1.tar.gz", fill)
    second = oci.pack_layer(tmp_path / "2.tar.gz", fill)
    assert (first.digest, first.diff_id) == (second.digest, second.diff_id)


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        pytest.param("usr/bin/python3.11", True, id="binaries"),
        pytest.param("dev/", True, id="dev-itself"),
        pytest.param("dev/null", False, id="device-nodes"),
        pytest.param("var/cache/apt/pkgcache.bin", False, id="apt-cache"),
        pytest.param("usr/share/doc/bash/", True, id="doc-folder"),
        pytest.param("usr/share/doc/bash/copyright", True, id="copyright"),
        pytest.param("usr/share/doc/bash/changelog.gz", False, id="changelog"),
        pytest.param("usr/share/man/man1/ls.1.gz", False, id="man"),
    ],
)
def test_rootfs_trimming(name: str, kept: bool) -> None:
    assert rootfs.keep_in_rootfs(name) is kept
