// Command coredns is CoreDNS (COREDNS_VERSION in hack/versions.env) with only the plugins the
// real-container node's Corefile uses (hack/node.py): cluster DNS for Services and headless
// Services' pod hostnames from the local control plane, the rest forwarded to the host.
// Upstream's own main (coredns.go) imports every plugin; this imports the few the node needs.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
