#!/usr/bin/env bash
# Print the path of a Prometheus server binary, installing one if needed (the e2e test
# tests/e2e/test_admin_view.py runs it; CI gets it through this script, nothing by hand):
#   1. `prometheus` on PATH (e.g. Debian's `prometheus` package, installed by hand);
#   2. else the binary extracted from Debian's `prometheus` package (apt-get download +
#      dpkg-deb -x, no daemon installed or started) into $CACHE/prometheus-deb/;
#   3. else, where apt has no `prometheus` package, built from the Go module
#      github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_MODULE into $CACHE/prometheus-go/
#      (its HTTP API only: no web UI assets).
# $CACHE is ${XDG_CACHE_HOME:-~/.cache}/trainweave. Progress goes to stderr. Same sources as
# hack/promtool.sh.
set -euo pipefail
PROMETHEUS_MODULE=${PROMETHEUS_MODULE:-v0.316.0}  # Prometheus 3.16.0's module version
cache=${XDG_CACHE_HOME:-$HOME/.cache}/trainweave

if command -v prometheus >/dev/null 2>&1; then
  command -v prometheus
  exit 0
fi
deb_bin=$cache/prometheus-deb/usr/bin/prometheus
go_bin=$cache/prometheus-go/prometheus
for bin in "$deb_bin" "$go_bin"; do
  if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
  fi
done

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
if command -v apt-get >/dev/null 2>&1; then
  if { [ -z "$(candidate)" ] || [ "$(candidate)" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
    echo "prometheus: apt-get update (no candidate for prometheus yet)" >&2
    apt-get update -qq >&2 || true
  fi
  version=$(candidate)
  if [ -n "$version" ] && [ "$version" != "(none)" ]; then
    echo "prometheus: extracting it from Debian's prometheus $version" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp"
    chown _apt "$tmp" 2>/dev/null || true  # apt downloads as its _apt user
    (cd "$tmp" && apt-get download -q "prometheus=$version" >&2)
    rm -rf "$cache/prometheus-deb"
    mkdir -p "$cache/prometheus-deb"
    dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb \
      | tar -x -C "$cache/prometheus-deb" ./usr/bin/prometheus
    echo "$deb_bin"
    exit 0
  fi
fi
if command -v go >/dev/null 2>&1; then
  echo "prometheus: building github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_MODULE" >&2
  GOBIN="$cache/prometheus-go" GOFLAGS=-buildvcs=false \
    go install "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_MODULE" >&2
  echo "$go_bin"
  exit 0
fi
echo "prometheus: not found, and neither apt (Debian's prometheus package) nor Go can install it" >&2
exit 1
