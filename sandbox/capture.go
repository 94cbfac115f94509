package sandbox

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sbx-sh/sbx/capture"
	"github.com/sbx-sh/sbx/landlock"
	"github.com/sbx-sh/sbx/ns"
	"github.com/sbx-sh/sbx/policy"
)

// The plan of the capture (network.capture, on unless turned off): in
// filtered mode the sandbox's network namespace gets a TUN device whose
// other end is the supervisor (capture_linux.go), and the command's view
// gets a resolv.conf that names sbx's resolver on it, a hosts file with
// only the loopback names, and an nsswitch.conf whose hosts line is
// "files dns", so that every other name a client dials is the name the
// policy sees.

// tunDevice is the clone device of the TUN driver.
const tunDevice = "/dev/net/tun"

// planCapture turns the capture on for a filtered run when the policy
// wants it and this user can open the TUN device; when the device is
// out of reach the run goes on without, with a note.
func planCapture(pl *Plan, p *policy.Policy) error {
	if !p.Network.Capture || runtime.GOOS != "linux" {
		return nil
	}
	// The early process's device was given its addresses already, and
	// Prespawn opened /dev/net/tun before it asked for one.
	names := earlyNames()
	if names == nil {
		if err := tunUsable(); err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("network.capture: off: %v; clients that ignore the proxy variables get no network (sbx doctor --fix makes the device usable; --capture off says you know)", err))
			return nil
		}
		var err error
		if names, err = capture.NewNames(netip.Prefix{}); err != nil {
			return fmt.Errorf("network.capture: %w", err)
		}
	}
	pl.Net.Capture, pl.Net.names = true, names
	_, _, res4, _ := names.DeviceAddrs()
	host, _ := os.Hostname()
	for _, f := range []struct {
		path    string
		content func([]byte) []byte
		already func([]byte) bool // the host's file says the same already: no copy
	}{
		{"/etc/resolv.conf", func([]byte) []byte { return resolvConf(res4) }, func([]byte) bool { return false }},
		{"/etc/hosts", func([]byte) []byte { return hostsFile(host) }, func(b []byte) bool { return onlyLoopbackNames(b, host) }},
		{"/etc/nsswitch.conf", nsswitchConf, filesThenDNS},
	} {
		real, err := filepath.EvalSymlinks(f.path)
		if err != nil {
			if f.path != "/etc/nsswitch.conf" { // glibc's default then is "dns files"
				p.Notes = append(p.Notes, fmt.Sprintf("network.capture: %s: %v: names resolve as the host's file says", f.path, err))
			}
			continue
		}
		old, err := os.ReadFile(real)
		if err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("network.capture: %s: %v: names resolve as the host's file says", f.path, err))
			continue
		}
		pl.Net.captureFiles = append(pl.Net.captureFiles, captureFile{maskedFile{Path: real, Content: f.content(old)}, f.already(old)})
	}
	return nil
}

// tunUsable reports why the TUN device cannot be opened, if it cannot.
// The sandbox's first process opens it with the caller's own rights (its
// root is the caller), so the supervisor's open answers for it.
func tunUsable() error {
	f, err := os.OpenFile(tunDevice, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// captureFile is one of the files the capture binds over the host's.
type captureFile struct {
	maskedFile
	// same: the host's file says what the copy would already; where the
	// command cannot write it, it is left as it is (one bind less).
	same bool
}

// captureViewOps are the capture's files bound over the host's, each
// where the view shows the host's own file; one the view does not show
// is left as it is, with a note.
func (pl *Plan) captureViewOps(p *policy.Policy) {
	writable := landlock.WritableRoots(p)
	for _, f := range pl.Net.captureFiles {
		shown := pl.Mounts.HostInode(f.Path)
		if f.same && shown && !policy.WithinAny(f.Path, writable) {
			continue
		}
		if !shown {
			p.Notes = append(p.Notes, fmt.Sprintf("network.capture: %s is not the host's in the sandbox's view: left as it is", f.Path))
			continue
		}
		pl.Mounts.Ops = append(pl.Mounts.Ops, ns.Op{Kind: ns.OpContent, Path: f.Path, Content: f.Content, Why: "network.capture"})
	}
}

// resolvConf names only sbx's resolver: no search domains, so the name
// a client asks for is the name the policy sees.
func resolvConf(resolver netip.Addr) []byte {
	return []byte("# sbx: names resolve through sbx's resolver on the capture device (network.capture)\n" +
		"nameserver " + resolver.String() + "\noptions timeout:2 attempts:2\n")
}

// hostsFile keeps only the loopback names: localhost and the host's own
// name. Every other name goes to the resolver.
func hostsFile(host string) []byte {
	var b strings.Builder
	b.WriteString("# sbx: only the loopback names; every other name resolves through sbx (network.capture)\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if host != "" && host != "localhost" && !strings.ContainsAny(host, " \t\n#") {
		b.WriteString("127.0.1.1\t" + host)
		if short, _, ok := strings.Cut(host, "."); ok && short != "" {
			b.WriteString(" " + short)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// nsswitchHosts replaces the hosts line. glibc's parser takes no
// comment after a service list ("#" would be read as a service).
const nsswitchHosts = "# sbx (network.capture): names resolve through sbx's resolver\nhosts: files dns\n"

// nsswitchConf is the host's nsswitch.conf with its hosts line made
// "files dns": no multicast DNS, no systemd-resolved, no other source
// that would answer a name without sbx.
func nsswitchConf(old []byte) []byte {
	var out bytes.Buffer
	seen := false
	for _, line := range strings.SplitAfter(string(old), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && strings.TrimSpace(k) == "hosts" {
			if !seen {
				out.WriteString(nsswitchHosts)
			}
			seen = true
			continue
		}
		out.WriteString(line)
	}
	if !seen {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteString("\n")
		}
		out.WriteString(nsswitchHosts)
	}
	return out.Bytes()
}

// filesThenDNS reports whether an nsswitch.conf's hosts line is "files
// dns" already (glibc reads the first hosts line).
func filesThenDNS(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && strings.TrimSpace(k) == "hosts" {
			return strings.Join(strings.Fields(v), " ") == "files dns"
		}
	}
	return false
}

// onlyLoopbackNames reports whether a hosts file names nothing but the
// loopback names hostsFile keeps (localhost and its IPv6 aliases, the
// host's own name), each on a loopback address: then it can stay.
func onlyLoopbackNames(b []byte, host string) bool {
	keep := map[string]bool{"localhost": true, "localhost.localdomain": true, "ip6-localhost": true, "ip6-loopback": true}
	if host != "" {
		keep[host] = true
		if short, _, ok := strings.Cut(host, "."); ok {
			keep[short] = true
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || !a.IsLoopback() {
			return false
		}
		for _, name := range f[1:] {
			if !keep[strings.ToLower(name)] {
				return false
			}
		}
	}
	return true
}
