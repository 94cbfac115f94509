package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sbx-sh/sbx/netproxy"
	"github.com/sbx-sh/sbx/policy"
)

// maxControlLine bounds one --control-fd line.
const maxControlLine = 1 << 20

// readControl is srt's --control-fd: one JSON settings object per line on
// descriptor fd; each line replaces the proxy's network lists (only those
// change a running sandbox). A bad line is reported on stderr and
// dropped; end of input is not an error. The descriptor belongs to the
// supervisor alone: it is close-on-exec and never handed to init.
// The managed layer's lists stay in force whatever a line says (see
// policy.ManagedNetwork.Apply).
func readControl(fd int, px *netproxy.Proxy, managed *policy.ManagedNetwork, stderr io.Writer) {
	f := os.NewFile(uintptr(fd), "control-fd")
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxControlLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name := fmt.Sprintf("--control-fd %d line %d", fd, n)
		u, err := policy.ParseNetworkUpdate(name, []byte(line))
		if err == nil {
			u = managed.Apply(u)
			err = px.SetPolicy(netproxy.Config{Allowed: u.AllowedDomains, Denied: u.DeniedDomains,
				DeniedReasons: u.DeniedDomainReasons, DeniedResolved: u.DeniedResolvedAddresses})
		}
		if err != nil {
			fmt.Fprintf(stderr, "sbx: %s: %s; line dropped, the previous lists stay\n", name, strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "sbx: --control-fd %d: %v; no further updates\n", fd, err)
	}
}

// onlyManagedDomains: under allowManagedDomainsOnly nothing but the
// managed allow list opens a host, so --ask-fd is never consulted.
func onlyManagedDomains(m *policy.ManagedNetwork) bool {
	return m != nil && m.DomainsOnly
}
