#!/usr/bin/env bash
# `make test`: lint first (seconds), then the e2e tier in the foreground and, beside it, the rest
# of the fast lane (types, the unit and schema tiers, promtool, argo lint), whose output goes to
# .cache/fast-lane.log and is printed when both end. The fast lane starts once the control plane's
# engines are built (`hack/build.sh core`, which waits under the build locks for a build under way):
# on a cold machine the build is CPU-bound and the e2e tier waits for it, so CPU the fast lane took
# from it would come straight off the run's length; beside the e2e tier (which mostly waits on
# Argo's requeue and kwok) it costs little (docs/local-control-plane.md, "Cold and warm").
# With KUBECONFIG_E2E (a kind cluster) nothing is built first.
# Usage: hack/test.sh MAKE; exit: the e2e tier's code, else the fast lane's.
set -uo pipefail
MAKE=${1:-make}
mkdir -p .cache
$MAKE --no-print-directory lint || exit $?
t0=$SECONDS
if [[ -z "${KUBECONFIG_E2E:-}" ]] && ! bash hack/build.sh core >.cache/build-core.log 2>&1; then
  cat .cache/build-core.log >&2; echo "test.sh: hack/build.sh core failed" >&2; exit 1
fi
echo "test.sh: the control plane's engines ready after $((SECONDS - t0))s; the fast lane starts beside the e2e tier (.cache/fast-lane.log)"
$MAKE --no-print-directory -k typecheck unit-fast schema promtool argo-lint >.cache/fast-lane.log 2>&1 &
FAST=$!
e2e=0
$MAKE --no-print-directory e2e || e2e=$?
fast=0
wait "$FAST" || fast=$?
echo "test.sh: the fast lane (types, unit, schema, promtool, argo lint), exit $fast:"
cat .cache/fast-lane.log
echo "test.sh: e2e exit $e2e, fast lane exit $fast"
if [[ $e2e -ne 0 ]]; then exit "$e2e"; fi
exit "$fast"
