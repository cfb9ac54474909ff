#!/usr/bin/env bash
# Print the path of a promtool, installing one if needed (`make promtool` runs this): the same
# sources as the server, hack/prometheus.sh.
exec bash "$(dirname "$0")/prometheus.sh" promtool
