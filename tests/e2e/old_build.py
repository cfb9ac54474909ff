"""An earlier build of trainweave to run beside this one: the tree of a git commit of this
repository, laid out as the installed package (trainweave/ with adapters/, integrations/ and
workflows/ inside, as pyproject.toml's package-dir maps them), cached under
${XDG_CACHE_HOME:-~/.cache}/trainweave/builds/<commit>/. Run it with that folder as both the
working directory and PYTHONPATH (the editable install of this checkout is found after them)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave" / "builds"
MAPPED = ("adapters", "integrations", "workflows")


def tree(commit: str) -> Path:
    """The package tree of ``commit`` (full hash), made once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{commit}.lock").open("w") as lock:  # e2e workers run at once (xdist)
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _make(commit)


def _make(commit: str) -> Path:
    out = CACHE / commit
    link = out / "link"
    if (link / "trainweave" / "cli.py").exists():
        return link
    shutil.rmtree(out, ignore_errors=True)
    src = out / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkg = link / "trainweave"
    pkg.mkdir(parents=True)
    for f in (src / "trainweave").iterdir():
        (pkg / f.name).symlink_to(f)
    for d in MAPPED:
        (pkg / d).symlink_to(src / d)
    return link
