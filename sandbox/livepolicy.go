package sandbox

import (
	"bufio"
	"encoding/json"
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
//
// When the descriptor is a socket (srt's callers pass a pipe, which is
// left as it is), each line is acknowledged on it once it is decided:
// {"line":K,"applied":true} when the new lists decide every connection
// from then on, {"line":K,"applied":false,"error":"…"} when it was
// dropped. An acknowledgment is sent without waiting: one the caller
// leaves unread in a full socket buffer is lost, never a stall of the
// updates.
func readControl(fd int, px *netproxy.Proxy, managed *policy.ManagedNetwork, stderr io.Writer) {
	f := os.NewFile(uintptr(fd), "control-fd")
	defer f.Close()
	ack := isSocket(fd)
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
		if ack {
			sendAck(fd, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "sbx: --control-fd %d: %v; no further updates\n", fd, err)
	}
}

// controlAck is the acknowledgment of one --control-fd line.
type controlAck struct {
	Line    int    `json:"line"`
	Applied bool   `json:"applied"`
	Error   string `json:"error,omitempty"`
}

// sendAck writes the acknowledgment of line n (err: why it was dropped)
// without blocking.
func sendAck(fd, n int, err error) {
	a := controlAck{Line: n, Applied: err == nil}
	if err != nil {
		a.Error = strings.ReplaceAll(err.Error(), "\n", " ")
	}
	b, _ := json.Marshal(a)
	_ = sendNoWait(fd, append(b, '\n'))
}

// onlyManagedDomains: under allowManagedDomainsOnly nothing but the
// managed allow list opens a host, so --ask-fd is never consulted.
func onlyManagedDomains(m *policy.ManagedNetwork) bool {
	return m != nil && m.DomainsOnly
}
