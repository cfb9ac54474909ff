#!/usr/bin/env bash
# `make test`: lint first (seconds), then the e2e tier, and the rest of the fast lane (types, the
# unit and schema tiers, promtool, argo lint) beside the e2e tier's serial phase, whose tests
# mostly wait on the engines and leave the CPU idle; its output goes to .cache/fast-lane.log and is
# printed at the end. On a cold machine the engines' build is CPU-bound and the e2e tier waits for
# it, and the parallel phase keeps both cores busy: CPU the fast lane took from either would come
# straight off the run's length (docs/local-control-plane.md, "How the e2e tier runs", cold runs
# 5 and 6). When the e2e tier ends before its serial phase starts (e.g. the control plane did not
# come up), the fast lane runs after it. `make check` is the quick loop without Go.
# Usage: hack/test.sh MAKE; exit: the e2e tier's code, else the fast lane's.
#        hack/test.sh --fast-lane MAKE: only the fast lane, into .cache/fast-lane.{log,rc}.
set -uo pipefail
if [[ "${1:-}" == "--fast-lane" ]]; then
  t0=$SECONDS code=0
  ${2:-make} --no-print-directory -k typecheck unit-fast schema promtool argo-lint \
    >.cache/fast-lane.log 2>&1 || code=$?
  echo "test.sh: the fast lane took $((SECONDS - t0))s, exit $code" >>.cache/fast-lane.log
  echo "$code" >.cache/fast-lane.rc
  exit "$code"
fi
MAKE=${1:-make}
mkdir -p .cache
rm -f .cache/fast-lane.rc .cache/fast-lane.log
$MAKE --no-print-directory lint || exit $?
e2e=0
E2E_BESIDE_SERIAL="bash hack/test.sh --fast-lane '$MAKE'" $MAKE --no-print-directory e2e || e2e=$?
[[ -f .cache/fast-lane.rc ]] || bash hack/test.sh --fast-lane "$MAKE"
fast=$(cat .cache/fast-lane.rc)
echo "test.sh: the fast lane (types, unit and schema tiers, promtool, argo lint), .cache/fast-lane.log:"
cat .cache/fast-lane.log
echo "test.sh: e2e exit $e2e, fast lane exit $fast"
if [[ $e2e -ne 0 ]]; then exit "$e2e"; fi
exit "$fast"
