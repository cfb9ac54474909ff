#!/usr/bin/env bash
# Print the path of a promtool, installing one if needed (`make promtool` runs this).
#   1. `promtool` on PATH (e.g. Debian's `prometheus` package, installed by hand);
#   2. else promtool extracted from Debian's `prometheus` package (apt-get download +
#      dpkg-deb -x, no daemon installed or started) into $CACHE/promtool-deb/;
#   3. else, where apt has no `prometheus` package, built from the Go module
#      github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_MODULE into $CACHE/promtool-go/
#      (about 5 min cold).
# $CACHE is ${XDG_CACHE_HOME:-~/.cache}/trainweave. Progress goes to stderr.
set -euo pipefail
PROMTOOL_MODULE=${PROMTOOL_MODULE:-v0.316.0}  # Prometheus 3.16.0's module version
cache=${XDG_CACHE_HOME:-$HOME/.cache}/trainweave

if command -v promtool >/dev/null 2>&1; then
  command -v promtool
  exit 0
fi
deb_bin=$cache/promtool-deb/usr/bin/promtool
go_bin=$cache/promtool-go/promtool
for bin in "$deb_bin" "$go_bin"; do
  if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
  fi
done

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
if command -v apt-get >/dev/null 2>&1; then
  if { [ -z "$(candidate)" ] || [ "$(candidate)" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
    echo "promtool: apt-get update (no candidate for prometheus yet)" >&2
    apt-get update -qq >&2 || true
  fi
  version=$(candidate)
  if [ -n "$version" ] && [ "$version" != "(none)" ]; then
    echo "promtool: extracting it from Debian's prometheus $version" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp"
    chown _apt "$tmp" 2>/dev/null || true  # apt downloads as its _apt user
    (cd "$tmp" && apt-get download -q "prometheus=$version" >&2)
    rm -rf "$cache/promtool-deb"
    mkdir -p "$cache/promtool-deb"
    dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb \
      | tar -x -C "$cache/promtool-deb" ./usr/bin/promtool
    echo "$deb_bin"
    exit 0
  fi
fi
if command -v go >/dev/null 2>&1; then
  echo "promtool: building github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_MODULE" >&2
  GOBIN="$cache/promtool-go" GOFLAGS=-buildvcs=false \
    go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_MODULE" >&2
  echo "$go_bin"
  exit 0
fi
echo "promtool: not found, and neither apt (Debian's prometheus package) nor Go can install it" >&2
exit 1
