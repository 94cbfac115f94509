//go:build linux

package main

// Attack tests of the capture (network.capture): in filtered
// mode the command runs in a network namespace whose only way out is the
// TUN device sbx0, served by the supervisor. The command must keep no
// way to change the device, its addresses or routes, to reach the TUN
// driver, to hold the device's descriptor, or to rewrite the files that
// name sbx's resolver; and after every attempt a client that ignores the
// proxy variables must still reach the allowed loopback server through
// the capture. Every refusal has a control where the same probe works (a
// user and network namespace of the test's own), so no assertion passes
// merely because the probe is broken.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// needCapture skips when this user cannot open the TUN device: sbx then
// runs without the capture (with a note), and there is nothing to attack.
func needCapture(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("the capture needs /dev/net/tun openable by this user (sbx doctor --fix): %v", err)
	}
	f.Close()
}

// captureServer is the loopback HTTP server the captured clients must
// still reach, and the flags that allow it by name and by address.
func captureServer(t *testing.T) (port string, c *counter, flags []string) {
	t.Helper()
	s, c := httpServer(t, false)
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port, c, []string{"--allow-domain", "test.localhost:" + port, "--allow-domain", "127.0.0.1:" + port}
}

// noProxyShell runs a command with every proxy variable unset: only the
// capture carries its connections.
var noProxyShell = strings.Join(noProxy(), " ") + " "

// capturedAfter is the script's tail: the resolver files still name sbx's
// resolver, the device is still up, and the probe's Go client and python
// (when installed) reach the server through the capture.
func capturedAfter(port string) string {
	url := "http://test.localhost:" + port + "/captured"
	return "echo \"resolv_ns: $(grep -c '^nameserver 198\\.18\\.0\\.2$' /etc/resolv.conf)\"\n" +
		noProxyShell + q(attackBin) + " get " + q(url) + "\n" +
		"if command -v python3 >/dev/null; then " + noProxyShell +
		"python3 -c 'import sys, urllib.request as u; print(\"python: OK\", u.urlopen(sys.argv[1], timeout=10).status)' " + q(url) +
		" 2>&1 | tail -n 1; fi\n"
}

// wantCaptured checks capturedAfter's lines and that the server saw the
// requests.
func wantCaptured(t *testing.T, r result, port string, c *counter) {
	t.Helper()
	p := parseProbe(r.stdout)
	if p["resolv_ns"] != "1" {
		t.Errorf("/etc/resolv.conf no longer names sbx's resolver (resolv_ns %q)\n%s", p["resolv_ns"], r)
	}
	want(t, r, "get http://test.localhost:"+port+"/captured", "OK")
	n := int64(1)
	if _, err := exec.LookPath("python3"); err == nil {
		n = 2
		if got := p["python"]; got != "OK 200" {
			t.Errorf("python through the capture: %q\n%s", got, r)
		}
	}
	if got := c.n.Load(); got != n {
		t.Errorf("the loopback server saw %d requests, want %d (%q)\n%s", got, n, c.lines, r)
	}
}

// TestAttackCaptureDevice: sbx0 down, another address or MTU, its
// default routes deleted, a route for 127.0.0.0/8 through it, by ioctl,
// by rtnetlink and with ip(8): the command holds no CAP_NET_ADMIN (the
// capabilities are dropped; seccomp is not what refuses these), so each
// is EPERM and the capture still carries a connection afterwards.
func TestAttackCaptureDevice(t *testing.T) {
	needCapture(t)
	port, c, flags := captureServer(t)
	ipCmds := [][2]string{
		{"ip_link_down", "ip link set sbx0 down"},
		{"ip_link_mtu", "ip link set sbx0 mtu 1280"},
		{"ip_addr_add", "ip addr add 198.18.0.3/32 dev sbx0"},
		{"ip_addr_flush", "ip addr flush dev sbx0"},
		{"ip_route_del", "ip route del default"},
		{"ip6_route_del", "ip -6 route del default"},
		{"ip_route_add", "ip route add 127.0.0.0/8 dev sbx0"},
		{"ip_route_replace", "ip route replace default dev lo"},
	}
	script := probes([]string{"capdev", "sbx0"})
	script += "if command -v ip >/dev/null; then\n"
	for _, c := range ipCmds {
		script += c[1] + " 2>/dev/null; echo \"" + c[0] + ": $?\"\n"
	}
	script += "fi\n" + probes([]string{"capdev", "sbx0"}) + capturedAfter(port)
	r := sh(t, runOpts{}, script, append(probeDir(), flags...)...)
	wantCode(t, r, 0)
	if strings.Contains(r.stderr, "network.capture: off") || !strings.Contains(r.stdout, "capdev sbx0: OK index=4096") {
		t.Fatalf("the capture device is not there\n%s", r)
	}
	for _, n := range []string{"SIOCSIFFLAGS down", "SIOCSIFADDR", "SIOCSIFMTU", "SIOCDELRT default", "SIOCADDRT 127.0.0.0/8",
		"RTM_DELROUTE default", "RTM_DELROUTE default6", "RTM_NEWROUTE 127.0.0.0/8", "RTM_NEWLINK down", "RTM_NEWADDR"} {
		want(t, r, n, "EPERM")
	}
	// The second capdev ran after ip(8): the device is still up.
	if !strings.Contains(r.stdout, "SIOCGIFFLAGS: OK up=true\n") || strings.Contains(r.stdout, "up=false") {
		t.Errorf("sbx0 is not up after the attempts\n%s", r)
	}
	if _, err := exec.LookPath("ip"); err == nil {
		p := parseProbe(r.stdout)
		for _, c := range ipCmds {
			if got := p[c[0]]; got == "0" || got == "" {
				t.Errorf("%s: exit %q\n%s", c[1], got, r)
			}
		}
	}
	wantCaptured(t, r, port, c)

	// Control: with CAP_NET_ADMIN over a network namespace (a user and
	// network namespace of the test's own), the same probe changes its lo
	// (the routes fail only because lo there is down).
	ctl := direct(t, ownNamespaces(syscall.CLONE_NEWNET), "capdev", "lo")
	wantCode(t, ctl, 0)
	for _, n := range []string{"SIOCSIFFLAGS down", "SIOCSIFADDR", "SIOCSIFMTU", "RTM_NEWLINK down", "RTM_NEWADDR"} {
		want(t, ctl, n, "OK")
	}
	for _, n := range []string{"SIOCDELRT default", "SIOCADDRT 127.0.0.0/8", "RTM_DELROUTE default", "RTM_NEWROUTE 127.0.0.0/8"} {
		wantNot(t, ctl, n, "EPERM")
	}
}

// TestAttackCaptureTUN: the TUN driver is out of the command's reach (no
// /dev/net in the view, and no mknod of a node of its own: Landlock and
// the missing CAP_MKNOD each refuse it), no process
// the command can see holds a TUN descriptor (sbx's init sent it to the
// supervisor and closed it before the fork), and a new user and network
// namespace, which would have only its own lo, is refused by seccomp.
func TestAttackCaptureTUN(t *testing.T) {
	needCapture(t)
	port, c, flags := captureServer(t)
	w := t.TempDir()
	r := sh(t, runOpts{dir: w}, probes(
		[]string{"tun", w},
		[]string{"tunfds"},
		[]string{"netns"},
	)+"mknod "+q(filepath.Join(w, "tun-cmd"))+" c 10 200 2>/dev/null; echo \"mknod_cmd: $?\"\n"+
		capturedAfter(port), append(append(probeDir(), "--allow-write", w), flags...)...)
	wantCode(t, r, 0)
	want(t, r, "stat /dev/net", "ENOENT")
	want(t, r, "open /dev/net/tun", "ENOENT")
	// Landlock refuses making a character device (EACCES) before the
	// kernel asks for CAP_MKNOD (EPERM), which the command lacks too.
	want(t, r, "mknod", "EACCES", "EPERM")
	if got := parseProbe(r.stdout)["mknod_cmd"]; got == "0" || got == "" {
		t.Errorf("mknod(1): exit %q\n%s", got, r)
	}
	want(t, r, "tunfds", "OK")
	if got := parseProbe(r.stdout)["tunfds"]; got != "OK 0" || strings.Contains(r.stdout, "tunfd ") {
		t.Errorf("a process in the sandbox holds a TUN descriptor\n%s", r)
	}
	want(t, r, "list /proc/self/fd", "OK")
	// PID 1 is sbx's init: its descriptors are either listed (and hold no
	// TUN) or out of reach; either way the scan above saw none.
	want(t, r, "list /proc/1/fd", "OK", "EACCES", "EPERM")
	want(t, r, "clone_newuser_newnet", "EPERM")
	// Refused by the filter (a recorded syscall violation), not by the
	// kernel's own limits.
	if !strings.Contains(r.stderr, "syscall deny clone (CLONE_NEWUSER|CLONE_NEWNET") {
		t.Errorf("the new user and network namespace was not refused by seccomp\n%s", r)
	}
	if strings.Contains(r.stdout, "netns interfaces") {
		t.Errorf("a new network namespace was made\n%s", r)
	}
	wantCaptured(t, r, port, c)

	// Controls: in a user and network namespace of the test's own, the
	// host's clone device opens and makes a device; a TUN descriptor the
	// probe inherits is found by the scan; and a new user and network
	// namespace, where allowed, has only lo and no route.
	ctl := direct(t, ownNamespaces(syscall.CLONE_NEWNET), "tun", t.TempDir())
	want(t, ctl, "open /dev/net/tun", "OK")
	want(t, ctl, "TUNSETIFF /dev/net/tun", "OK")
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(attackBin, "tunfds")
	cmd.ExtraFiles = []*os.File{f}
	ctl = runCmd(t, cmd)
	if got := parseProbe(ctl.stdout)["tunfds"]; got == "OK 0" || got == "" || !strings.Contains(ctl.stdout, fmt.Sprintf("tunfd %d 3: /dev/net/tun", cmd.Process.Pid)) {
		t.Errorf("control: the scan missed an inherited TUN descriptor\n%s", ctl)
	}
	ctl = direct(t, nil, "netns")
	if parseProbe(ctl.stdout).result("clone_newuser_newnet") == "OK" {
		want(t, ctl, "netns interfaces", "OK")
		if got := parseProbe(ctl.stdout)["netns interfaces"]; got != "OK lo" {
			t.Errorf("control: a new network namespace holds %q\n%s", got, ctl)
		}
		want(t, ctl, "netns dial 198.18.0.2:53", "ENETUNREACH")
	} else {
		t.Logf("control: this host refuses unprivileged user namespaces: %s", ctl.stdout)
	}
}

// TestAttackCaptureResolverFiles: /etc/resolv.conf, /etc/hosts and
// /etc/nsswitch.conf, which the capture binds into the view so that
// every name goes to sbx's resolver, cannot be written, chmodded,
// renamed away, exchanged or mounted over, and still say what sbx wrote.
func TestAttackCaptureResolverFiles(t *testing.T) {
	needCapture(t)
	port, c, flags := captureServer(t)
	w := t.TempDir()
	spare := filepath.Join(w, "spare")
	writeFile(t, spare, "nameserver 127.0.0.1\n")
	files := []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"}
	var lines [][]string
	script := "for f in " + strings.Join(files, " ") + "; do echo \"sum $f: $(cksum < $f)\"; done\n"
	for _, f := range files {
		lines = append(lines, []string{"tamper", f, spare}, []string{"bindover", spare, f})
	}
	script += probes(lines...)
	for i, f := range files {
		script += fmt.Sprintf("(echo 'nameserver 127.0.0.1' >> %s) 2>/dev/null; echo \"append_%d: $?\"\n", f, i)
		script += fmt.Sprintf("cp %s %s 2>/dev/null; echo \"cp_%d: $?\"\n", q(spare), f, i)
	}
	script += "for f in " + strings.Join(files, " ") + "; do echo \"sum2 $f: $(cksum < $f)\"; done\n"
	script += capturedAfter(port)
	r := sh(t, runOpts{dir: w}, script, append(append(probeDir(), "--allow-write", w), flags...)...)
	wantCode(t, r, 0)
	p := parseProbe(r.stdout)
	for i, f := range files {
		wantNot(t, r, "open_wronly "+f, "OK")
		wantNot(t, r, "chmod "+f, "OK")
		wantNot(t, r, "rename "+f, "OK")
		wantNot(t, r, "exchange "+f, "OK")
		want(t, r, "bind "+f, "EPERM")
		for _, k := range []string{fmt.Sprintf("append_%d", i), fmt.Sprintf("cp_%d", i)} {
			if got := p[k]; got == "0" || got == "" {
				t.Errorf("%s %s: exit %q\n%s", k, f, got, r)
			}
		}
		if p["sum "+f] == "" || p["sum "+f] != p["sum2 "+f] {
			t.Errorf("%s changed: %q then %q\n%s", f, p["sum "+f], p["sum2 "+f], r)
		}
	}
	wantCaptured(t, r, port, c)

	// With /etc writable by policy, Landlock no longer stands in the
	// way: for root the bound copies are still read-only mount points;
	// for another user the kernel refuses writes to the host's /etc as
	// well, and the probes must fail all the same. (tamper only: it
	// writes nothing and undoes a rename, so the host's files are safe
	// even if the copies were missing.)
	resolverFilesWritableEtc(t, w, spare, files, port, c, flags, unix.Access("/etc", unix.W_OK) == nil)

	// Control: the same probes work on files of the test's own (the
	// bind in a mount namespace of its own).
	a, b := filepath.Join(w, "a"), filepath.Join(w, "b")
	writeFile(t, a, "a\n")
	writeFile(t, b, "b\n")
	ctl := direct(t, nil, "tamper", a, b)
	for _, n := range []string{"open_wronly", "chmod", "rename", "exchange"} {
		want(t, ctl, n+" "+a, "OK")
	}
	ctl = direct(t, ownNamespaces(syscall.CLONE_NEWNS), "bindover", b, a)
	want(t, ctl, "bind "+a, "OK")
}

func resolverFilesWritableEtc(t *testing.T, w, spare string, files []string, port string, c *counter, flags []string, canWriteEtc bool) {
	t.Helper()
	var lines [][]string
	for _, f := range files {
		lines = append(lines, []string{"tamper", f, spare})
	}
	c.n.Store(0)
	r := sh(t, runOpts{dir: w}, probes(lines...)+capturedAfter(port),
		append(append(probeDir(), "--allow-write", w, "--allow-write", "/etc"), flags...)...)
	wantCode(t, r, 0)
	for _, f := range files {
		wantNot(t, r, "open_wronly "+f, "OK")
		wantNot(t, r, "exchange "+f, "OK")
		if canWriteEtc {
			// Only the read-only mount points stand in the way.
			want(t, r, "chmod "+f, "EROFS")
			want(t, r, "rename "+f, "EBUSY")
		} else {
			wantNot(t, r, "chmod "+f, "OK")
			wantNot(t, r, "rename "+f, "OK")
		}
	}
	wantCaptured(t, r, port, c)
}

// TestAttackCaptureOtherDestinations: through the capture, only the
// allowed name and port go out. The allowed name on another port (where
// a second loopback server listens), the resolver's address on that
// port, and a synthetic address no name was given are refused
// (ECONNREFUSED: the capture answers with a reset) and reported, and the
// second server sees nothing; the allowed one still answers. The second
// server's address is allowed too (127.0.0.1:OTHER), so the address guard
// would let it through: only the name's port stands in the way.
func TestAttackCaptureOtherDestinations(t *testing.T) {
	needCapture(t)
	port, c, flags := captureServer(t)
	other, oc := tcpEcho(t, "tcp4", "127.0.0.1:0")
	_, otherPort, _ := net.SplitHostPort(other)
	dials := []string{"test.localhost:" + otherPort, "198.18.0.2:" + otherPort, "198.18.1.200:" + port}
	var lines [][]string
	for _, d := range dials {
		lines = append(lines, []string{"dial", "tcp4", d})
	}
	r := sh(t, runOpts{}, probes(lines...)+capturedAfter(port),
		append(append(probeDir(), flags...), "--allow-domain", "127.0.0.1:"+otherPort)...)
	wantCode(t, r, 0)
	for _, d := range dials {
		want(t, r, "dial tcp4 "+d, "ECONNREFUSED")
	}
	if !strings.Contains(r.stderr, "network deny test.localhost:"+otherPort+" ") {
		t.Errorf("the refused port was not reported\n%s", r)
	}
	if n := oc.n.Load(); n != 0 {
		t.Errorf("the server on the port not allowed saw %d connections (%q)\n%s", n, oc.lines, r)
	}
	wantCaptured(t, r, port, c)
}
