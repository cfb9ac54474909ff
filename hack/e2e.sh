#!/usr/bin/env bash
# The e2e tier in two phases on one running control plane (docs/local-control-plane.md, "How the
# e2e tier runs"): first every test not marked `serial`, E2E_WORKERS at a time (pytest-xdist,
# tests of one `xdist_group` on one worker: the real node's); then the `serial` ones alone (they
# restart an engine, change Kueue's configuration, switch upstream on or cordon a node).
# Each phase writes JUnit XML under .cache/e2e/ and prints its slowest tests and per-file totals.
# E2E_BESIDE_SERIAL (optional): a command started in the background as the serial phase starts and
# waited for at the end (hack/test.sh's fast lane: the serial tests leave most of the CPU idle);
# its output and exit code are its own business (it writes them to files).
# Usage: hack/e2e.sh PYTHON [pytest args...]; exit: the first failing phase's pytest exit code.
set -uo pipefail
PY=$1
shift
OUT=.cache/e2e
WORKERS=${E2E_WORKERS:-3}
mkdir -p "$OUT"
rc=0
ran=0
phase() {  # phase NAME MARKEXPR [pytest args]: 5 (nothing selected, e.g. under -k) is no failure
  local name=$1 expr=$2 code=0 t0=$SECONDS
  shift 2
  echo "e2e.sh: phase $name ($expr)"
  "$PY" -m pytest -m "$expr" tests/e2e --junitxml="$OUT/$name.xml" "$@" || code=$?
  echo "e2e.sh: phase $name: exit $code in $((SECONDS - t0))s"
  if [[ $code -eq 5 ]]; then return 0; fi
  ran=1
  if [[ $code -ne 0 && $rc -eq 0 ]]; then rc=$code; fi
}
phase parallel "e2e and not serial" -n "$WORKERS" --dist loadgroup "$@"
beside=""
if [[ -n "${E2E_BESIDE_SERIAL:-}" ]]; then
  echo "e2e.sh: beside the serial phase: $E2E_BESIDE_SERIAL"
  env -u TRAINWEAVE_KUBECONFIG bash -c "$E2E_BESIDE_SERIAL" &
  beside=$!
fi
phase serial "e2e and serial" "$@"
if [[ -n "$beside" ]]; then
  t0=$SECONDS code=0
  wait "$beside" || code=$?
  echo "e2e.sh: waited $((SECONDS - t0))s after the serial phase for the command beside it (exit $code)"
fi
if [[ $ran -eq 0 ]]; then echo "e2e.sh: no test selected" >&2; exit 5; fi
exit "$rc"
