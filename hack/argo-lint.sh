#!/usr/bin/env bash
# Argo's own validation of what trainweave renders: `argo lint --offline` (the CLI of the pinned
# Argo module, built by hack/build.sh) of
#   - every examples/*/ TrainJob rendered now with `trainweave render`, and its golden rendered.yaml,
#   - examples/hera/*.py run now (each prints its Workflow) and their committed .yaml,
#   - every YAML file under tests/ holding an Argo Workflow (golden fixtures, e2e manifests).
# Usage: hack/argo-lint.sh [VENV]   (default .venv: its python and trainweave). Exit 1 on any lint error.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${1:-.venv}
PY="$VENV/bin/python"
ARGO="$(bash hack/build.sh --print-dir)/bin/argo"
[[ -x "$ARGO" ]] || bash hack/build.sh argo-cli >&2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

files=()
for tj in examples/*/trainjob.yaml; do
  ex=$(basename "$(dirname "$tj")")
  "$VENV/bin/trainweave" render "$tj" --runtime "$(dirname "$tj")/runtime.yaml" >"$OUT/$ex.yaml"
  files+=("$OUT/$ex.yaml" "$(dirname "$tj")/rendered.yaml")
done
for py in examples/hera/*.py; do
  "$PY" "$py" >"$OUT/hera-$(basename "$py" .py).yaml"
  files+=("$OUT/hera-$(basename "$py" .py).yaml")
  [[ -f "${py%.py}.yaml" ]] && files+=("${py%.py}.yaml")
done
while IFS= read -r f; do files+=("$f"); done < <(
  grep -rlE --include='*.yaml' --include='*.yml' '^kind: Workflow$' tests | sort
)
echo "argo-lint: $("$ARGO" version --short) lint --offline of ${#files[@]} files:"
printf '  %s\n' "${files[@]#"$OUT/"}"
"$ARGO" lint --offline --output simple "${files[@]}"
