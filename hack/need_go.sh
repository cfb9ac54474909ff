#!/usr/bin/env bash
# make unit: the tests marked `schema` (pyproject.toml markers) need Go, the version hack/build.sh
# needs (its go.mod wrappers say `go 1.26.0`). Without it, one clear line instead of ~30 errors.
GO_MIN=1.26
hint="install it (https://go.dev/dl/, with access to the Go module proxy) or run \`make unit PYTEST_ARGS='-m \"not e2e and not schema\"'\`"
if ! command -v go >/dev/null 2>&1; then
  echo "make unit: Go >= $GO_MIN is needed for the schema tests (hack/build.sh, hack/versions.env) and \`go\` is not on PATH: $hint" >&2
  exit 1
fi
v=$(go env GOVERSION 2>/dev/null | sed -nE 's/^go([0-9]+)\.([0-9]+).*/\1 \2/p')
read -r major minor <<<"$v"
if [ -z "$v" ] || [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "${minor}" -lt "${GO_MIN#1.}" ]; }; then
  echo "make unit: Go >= $GO_MIN is needed for the schema tests (hack/build.sh, hack/versions.env); \`go\` is $(go env GOVERSION 2>/dev/null || echo unknown): $hint" >&2
  exit 1
fi
