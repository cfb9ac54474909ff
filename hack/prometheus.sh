#!/usr/bin/env bash
# Print the path of a Prometheus binary, `prometheus` (the server, default) or `promtool`,
# installing it if needed. tests/e2e/test_admin_view.py runs the server, `make promtool` the
# tool (hack/promtool.sh); CI gets both through this script, nothing by hand:
#   1. the binary on PATH (e.g. Debian's `prometheus` package, installed by hand);
#   2. else the binary extracted from Debian's `prometheus` package (apt-get download +
#      dpkg-deb -x, no daemon installed or started) into $CACHE/<binary>-deb/;
#   3. else, where apt has no `prometheus` package, built from the Go module
#      github.com/prometheus/prometheus/cmd/<binary>@$PROMETHEUS_MODULE into $CACHE/<binary>-go/
#      (about 5 min cold; the server without web UI assets: its HTTP API only).
# $CACHE is ${XDG_CACHE_HOME:-~/.cache}/trainweave. Progress goes to stderr.
set -euo pipefail
name=${1:-prometheus}
case "$name" in prometheus|promtool) ;; *) echo "usage: $0 [prometheus|promtool]" >&2; exit 2;; esac
PROMETHEUS_MODULE=${PROMETHEUS_MODULE:-${PROMTOOL_MODULE:-v0.316.0}}  # Prometheus 3.16.0's
cache=${XDG_CACHE_HOME:-$HOME/.cache}/trainweave

if command -v "$name" >/dev/null 2>&1; then
  command -v "$name"
  exit 0
fi
deb_bin=$cache/$name-deb/usr/bin/$name
go_bin=$cache/$name-go/$name
for bin in "$deb_bin" "$go_bin"; do
  if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
  fi
done

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
if command -v apt-get >/dev/null 2>&1; then
  if { [ -z "$(candidate)" ] || [ "$(candidate)" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
    echo "$name: apt-get update (no candidate for prometheus yet)" >&2
    apt-get update -qq >&2 || true
  fi
  version=$(candidate)
  if [ -n "$version" ] && [ "$version" != "(none)" ]; then
    echo "$name: extracting it from Debian's prometheus $version" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp"
    chown _apt "$tmp" 2>/dev/null || true  # apt downloads as its _apt user
    (cd "$tmp" && apt-get download -q "prometheus=$version" >&2)
    rm -rf "$cache/$name-deb"
    mkdir -p "$cache/$name-deb"
    dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb \
      | tar -x -C "$cache/$name-deb" "./usr/bin/$name"
    echo "$deb_bin"
    exit 0
  fi
fi
if command -v go >/dev/null 2>&1; then
  echo "$name: building github.com/prometheus/prometheus/cmd/$name@$PROMETHEUS_MODULE" >&2
  GOBIN="$cache/$name-go" GOFLAGS=-buildvcs=false \
    go install "github.com/prometheus/prometheus/cmd/$name@$PROMETHEUS_MODULE" >&2
  echo "$go_bin"
  exit 0
fi
echo "$name: not found, and neither apt (Debian's prometheus package) nor Go can install it" >&2
exit 1
