"""The dynamic oracle of the status endpoint: Kubeflow Trainer's own status server.

``hack/status_oracle`` (upstream's ``statusserver.NewServer`` over TLS, its client recording the
status apply) is built against the pinned Trainer module into
``${XDG_CACHE_HOME:-~/.cache}/trainweave/status-oracle-<source hash>/`` (a wrapper go.mod
with Trainer's own go.sum, as hack/build.sh builds hack/oracle). ``upstream`` POSTs requests
to it and returns, per request, the HTTP code, the JSON answer and the apply patch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.crds import module_dir
from tests.versions import PINS, go_build_env

Json = dict[str, Any]
ROOT = Path(__file__).parents[2]
SOURCE = ROOT / "hack" / "status_oracle" / "main.go"
TRAINER_MODULE = "github.com/kubeflow/trainer/v2"


def binary() -> Path:
    """The oracle binary, built once per source and Trainer version."""
    version = PINS["TRAINER_VERSION"]
    digest = hashlib.sha256(SOURCE.read_bytes() + version.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainweave"
    work = cache / f"status-oracle-{digest}"
    out = work / "status_oracle"
    if out.exists():
        return out
    work.mkdir(parents=True, exist_ok=True)
    (work / "go.mod").write_text(
        f"module trainweave.local/statusoracle\n\ngo 1.26.0\n\nrequire {TRAINER_MODULE} {version}\n"
    )
    shutil.copy(SOURCE, work / "main.go")
    go_sum = work / "go.sum"
    shutil.copy(module_dir(TRAINER_MODULE, version) / "go.sum", go_sum)
    go_sum.chmod(0o644)
    # hack/build.sh's flags: the Trainer packages hack/oracle compiled are reused, not rebuilt
    env = go_build_env()
    env["GOFLAGS"] = f"-mod=mod {env['GOFLAGS']}"
    subprocess.run(["go", "mod", "tidy"], cwd=work, env=env, check=True, timeout=900)
    subprocess.run(
        ["go", "build", "-o", str(out) + ".tmp", "."],
        cwd=work,
        env=env,
        check=True,
        timeout=1800,
    )
    os.replace(str(out) + ".tmp", out)
    return out


def upstream(requests: list[tuple[str, bool]]) -> list[Json]:
    """Upstream's answer to each (body, authorized): ``{code, response, apply}``."""
    stdin = json.dumps([{"body": b, "authorized": a} for b, a in requests])
    out = subprocess.run(
        [str(binary())], input=stdin, capture_output=True, text=True, check=True, timeout=300
    )
    answers: list[Json] = json.loads(out.stdout)
    return answers
