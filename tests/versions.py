"""Engine versions for the schema tier, read from hack/versions.env (the one place they are pinned)."""

from __future__ import annotations

import os
from pathlib import Path

_ENV = Path(__file__).parents[1] / "hack" / "versions.env"
PINS = {
    key: value
    for key, _, value in (
        line.partition("=")
        for line in _ENV.read_text().splitlines()
        if line and not line.startswith("#")
    )
}
ARGO_MODULE = "github.com/argoproj/argo-workflows/v4"
# the pin, or the older supported one the e2e tier runs against (make e2e ARGO_VERSION=...)
ARGO_VERSION = os.environ.get("ARGO_VERSION") or PINS["ARGO_WORKFLOWS_VERSION"]
KUEUE_MODULE = "sigs.k8s.io/kueue"
KUEUE_VERSION = PINS["KUEUE_VERSION"]


def go_build_env() -> dict[str, str]:
    """The environment hack/build.sh builds with (``CGO_ENABLED=0``, hack/go-build-flags): a
    test's Go helper built with it reuses the packages the engines' builds left in the Go build
    cache (the same module graph compiles once), where the defaults (cgo on, no trimpath) would
    compile the whole graph again."""
    flags = os.environ.get("GOFLAGS", "")
    ours = (_ENV.parent / "go-build-flags").read_text().strip()
    return {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": f"{flags} {ours}".strip()}
