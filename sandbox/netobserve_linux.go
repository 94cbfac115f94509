package sandbox

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/sbx-sh/sbx/seccomp"
	"github.com/sbx-sh/sbx/violations"
	"golang.org/x/sys/unix"
)

// netRecord is the record for a notified connect or send under --net none
// (seccomp.Config.ObserveNet), when the kernel refuses it: the sandbox's
// network namespace holds loopback alone, so a destination that is not a
// loopback address has no route (ENETUNREACH). The kernel answers; this
// only predicts. A send on a stream socket ignores its address (TCP Fast
// Open aside), and a socket of another family refuses an inet address by
// itself: neither is recorded. A datagram to port 53 is a name lookup:
// the question's name, when the payload holds one, is the record's host.
//
// A lookup through a loopback address (a host whose resolv.conf names
// 127.0.0.53, systemd-resolved's) reaches the sandbox's own loopback,
// where no resolver runs unless the command started one: it is recorded
// when no socket in the sandbox's network namespace has port 53 (serves,
// given the caller's PID).
func netRecord(r *seccomp.Request, nc *seccomp.NetCall, serves func(pid int) bool) (violations.Record, bool) {
	if !nc.Dest.IsValid() {
		return violations.Record{}, false
	}
	inside := ""
	if seccomp.Reachable(nc.Dest.Addr()) {
		if nc.Dest.Port() != 53 || nc.SockType == 0 || serves(r.PID) {
			return violations.Record{}, false
		}
		inside = ", which nothing inside the sandbox serves"
	}
	proto := "udp"
	switch nc.SockType {
	case unix.SOCK_DGRAM:
	case unix.SOCK_STREAM:
		fastOpen := r.Syscall == "sendto" && r.Args[3]&unix.MSG_FASTOPEN != 0
		if r.Syscall != "connect" && !fastOpen {
			return violations.Record{}, false
		}
		proto = "tcp"
	case 0:
		return violations.Record{}, false // not an inet socket, or gone
	default:
		proto = "socket"
	}
	addr := nc.Dest.Addr().Unmap().String()
	port := int(nc.Dest.Port())
	rec := violations.Record{
		Kind: violations.KindNetwork, Source: violations.SourceObserver,
		PID: r.PID, Syscall: r.Syscall, Host: addr, Port: port,
		Detail: proto + " " + r.Syscall + ": no network (--net none)",
		Rule:   violations.RuleNetNone,
	}
	if port == 53 {
		rec.Detail = proto + " " + r.Syscall + ": a name lookup (DNS server " + net.JoinHostPort(addr, "53") + inside + "): no network (--net none)"
		payload := nc.Payload
		if proto == "tcp" && len(payload) >= 2 {
			payload = payload[2:] // the message's length
		}
		if name, ok := dnsQuestion(payload); ok {
			rec.Host, rec.Port = name, 0
			rec.Detail = "dns: lookup of " + name + " through " + net.JoinHostPort(addr, strconv.Itoa(port)) + inside + ": no network (--net none)"
		}
	}
	return rec, true
}

// servesDNS reports whether a socket of pid's network namespace has
// local port 53 (UDP or TCP, any address): a resolver inside may answer.
// A table it cannot read counts as served (no record).
func servesDNS(pid int) bool {
	for _, t := range []string{"udp", "udp6", "tcp", "tcp6"} {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/" + t)
		if err != nil {
			return true
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasSuffix(f[1], ":0035") {
				return true
			}
		}
	}
	return false
}

// dnsQuestion is the name asked in a DNS query message (RFC 1035 4.1):
// a query (QR clear) with at least one question, whose name is plain
// labels of letters, digits, '-' and '_' (no compression, at most 253
// characters). Anything else is not a name worth a record's host.
func dnsQuestion(b []byte) (string, bool) {
	if len(b) < 12 || b[2]&0x80 != 0 || (int(b[4])<<8|int(b[5])) == 0 {
		return "", false
	}
	var name []byte
	for i := 12; i < len(b); {
		n := int(b[i])
		i++
		if n == 0 {
			if len(name) == 0 {
				return "", false // the root
			}
			return string(name), true
		}
		if n > 63 || i+n > len(b) || len(name)+n+1 > 254 {
			return "", false
		}
		if len(name) > 0 {
			name = append(name, '.')
		}
		for _, c := range b[i : i+n] {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
				name = append(name, c)
			case c >= 'A' && c <= 'Z':
				name = append(name, c+'a'-'A')
			default:
				return "", false
			}
		}
		i += n
	}
	return "", false
}
