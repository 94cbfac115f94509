package policy

import (
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/internal/hostaddr"
)

// The spellings of the host's own and private network that a file in
// the working tree may not put in allowedDomains: each is refused (one
// line naming the file and --trust-project-settings), and each is
// accepted once the user trusts the file or when it comes from a file
// outside the tree.
var reachSpellings = []string{
	"localhost", "LOCALHOST", "localhost.", "LocalHost.", "localhost:5432",
	"*.localhost", "a.localhost", "db.localhost.", "*.a.localhost",
	"127.0.0.1", "127.0.0.1:2375", "127.1", "127.0.1", "2130706433", "0x7f000001",
	"0x7f.1", "0177.0.0.1", "0177.1", "017700000001", "127.255.255.254",
	"0.0.0.0", "0", "0x0",
	"::1", "[::1]", "[::1]:8080", "0:0:0:0:0:0:0:1", "::", "[::]:80",
	"::ffff:127.0.0.1", "[::ffff:7f00:1]", "::ffff:169.254.169.254",
	"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "[64:ff9b::10.0.0.1]:443", "64:ff9b:1::1",
	"2002:7f00:1::1", "2002:a9fe:a9fe::", "::7f00:1",
	"fe80::1", "fe80::1%eth0", "[fe80::1%25eth0]:80", "FE80::1",
	"169.254.169.254", "169.254.169.254:80", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376",
	"fd00:ec2::254", "100.100.100.200", "168.63.129.16",
	"169.254.0.1", "10.0.0.0", "10.0.0.1", "10.1", "012.0.0.1", "172.16.0.0", "172.31.255.255",
	"192.168.0.0", "192.168.1.1:80", "fc00::", "fd12:3456::1", "fec0::1",
	"100.64.0.0", "100.127.255.255",
	"224.0.0.1", "ff02::1", "240.0.0.1", "255.255.255.255",
}

func TestUntrustedReachSpellings(t *testing.T) {
	for _, e := range reachSpellings {
		t.Run(e, func(t *testing.T) {
			body := `"network": {"allowedDomains": [` + strconv.Quote(e) + `]}`
			in, f := treeSettings(t, body)
			mustFail(t, in, f, strconv.Quote(e), "--trust-project-settings", "network.allowedDomains")
			in.TrustProjectSettings = true
			mustBuild(t, in)
			// The same file outside the tree is the user's.
			out := input(t)
			user := filepath.Join(t.TempDir(), "user.json")
			mustWrite(t, user, srtFile(body))
			out.Settings = []string{user}
			mustBuild(t, out)
		})
	}
}

// pinnedRanges is hostaddr.Guarded written out: the test below fails
// when an entry is dropped, moved to another class or added unpinned.
var pinnedRanges = []string{
	"169.254.169.254/32 cloud metadata", "fd00:ec2::254/128 cloud metadata", "100.100.100.200/32 cloud metadata", "168.63.129.16/32 cloud metadata",
	"0.0.0.0/8 unspecified", "::/128 unspecified",
	"127.0.0.0/8 loopback", "::1/128 loopback",
	"169.254.0.0/16 link-local", "fe80::/10 link-local",
	"10.0.0.0/8 private", "172.16.0.0/12 private", "192.168.0.0/16 private", "fc00::/7 private", "fec0::/10 private",
	"100.64.0.0/10 carrier-grade NAT",
	"224.0.0.0/4 multicast", "ff00::/8 multicast",
	"240.0.0.0/4 reserved", "::/96 reserved", "64:ff9b:1::/48 reserved",
}

// TestUntrustedReachEveryRange pins the shared table and runs every
// entry of it through Build: the last address of each guarded range,
// written plainly and with a port, and for IPv4 also as NAT64, 6to4 and
// one decimal number, is refused from a file in the tree, naming its
// class.
func TestUntrustedReachEveryRange(t *testing.T) {
	var got []string
	for _, g := range hostaddr.Guarded {
		got = append(got, g.Prefix.String()+" "+g.Class)
	}
	if strings.Join(got, "\n") != strings.Join(pinnedRanges, "\n") {
		t.Fatalf("hostaddr.Guarded changed:\n got %q\nwant %q", got, pinnedRanges)
	}
	for _, g := range hostaddr.Guarded {
		a := lastAddr(g.Prefix) // ::/96's first address is ::, unspecified
		if hostaddr.Classify(a) != g.Class {
			t.Fatalf("%s: its last address %s is %q", g.Prefix, a, hostaddr.Classify(a))
		}
		spell := []string{a.String(), "[" + a.String() + "]:443"}
		if a.Is4() {
			b := a.As4()
			spell[1] = a.String() + ":443"
			nat64 := netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 12: b[0], b[1], b[2], b[3]})
			sixToFour := netip.AddrFrom16([16]byte{0x20, 0x02, b[0], b[1], b[2], b[3]})
			spell = append(spell, nat64.String(), sixToFour.String(), strconv.FormatUint(uint64(b[0])<<24|uint64(b[1])<<16|uint64(b[2])<<8|uint64(b[3]), 10))
		}
		for _, s := range spell {
			in, f := treeSettings(t, `"network": {"allowedDomains": [`+strconv.Quote(s)+`]}`)
			mustFail(t, in, f, "--trust-project-settings", g.Class)
		}
	}
}

// Public names and addresses, a name that merely resolves somewhere
// private (the proxy's guard refuses it at connect time), and an entry a
// trusted file names too, stay allowed from the tree.
func TestUntrustedReachAllowed(t *testing.T) {
	for _, e := range []string{"example.com", "*.example.com", "api.example.com:443", "93.184.216.34", "[2606:2800:220:1:248:1893:25c8:1946]:443", "localhost.example.com", "notlocalhost", "metadata.google.internal"} {
		in, _ := treeSettings(t, `"network": {"allowedDomains": [`+strconv.Quote(e)+`]}`)
		mustBuild(t, in)
	}
	// The user allows localhost:5432 in a file of their own; the
	// repository's same entry opens nothing new, its port-less one does.
	in, f := treeSettings(t, `"network": {"allowedDomains": ["LOCALHOST.:5432"]}`)
	user := filepath.Join(t.TempDir(), "user.json")
	mustWrite(t, user, srtFile(`"network": {"allowedDomains": ["localhost:5432"]}`))
	in.Settings = []string{user, f}
	mustBuild(t, in)
	mustWrite(t, f, srtFile(`"network": {"allowedDomains": ["localhost"]}`))
	mustFail(t, in, f, "--trust-project-settings")
	// The command line is the user's.
	in, _ = treeSettings(t, `"network": {"allowedDomains": ["127.0.0.1"]}`)
	in.AllowDomains = []string{"127.0.0.1"}
	mustBuild(t, in)
}

// An address of this host that no guarded range holds (a public
// interface address) is refused too: the proxy's guard knows it as the
// host's own, and a literal entry would exempt it.
func TestUntrustedReachOwnAddress(t *testing.T) {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok || hostaddr.Classify(ip) != "" {
			continue
		}
		in, f := treeSettings(t, `"network": {"allowedDomains": [`+strconv.Quote(ip.Unmap().String())+`]}`)
		mustFail(t, in, f, "an address of this host", "--trust-project-settings")
		return
	}
	t.Skip("no public interface address on this host")
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// A repository's bare "tlsTerminate": {} turns termination on, and with
// it the injection of masked credentials: refused while a credential is
// masked (one line naming the file and --trust-project-settings),
// honoured with trust, with --tls-terminate, from a trusted file, and
// when nothing is masked.
func TestUntrustedTerminationNeedsTrust(t *testing.T) {
	in, repo := treeSettings(t, `"network": {"allowedDomains": ["api.example.com"], "tlsTerminate": {}}`)
	user := filepath.Join(t.TempDir(), "user.json")
	for _, creds := range []string{
		`"credentials": {"envVars": [{"name": "MYTOKEN", "mode": "mask"}]}`,
		`"credentials": {"files": [{"path": "` + filepath.Join(in.Home, "tok") + `", "mode": "mask"}]}`,
		`"credentials": {"awsPairs": [{"accessKeyIdVar": "K", "secretAccessKeyVar": "S"}]}`,
	} {
		mustWrite(t, filepath.Join(in.Home, "tok"), "x")
		mustWrite(t, user, srtFile(`"network": {"allowedDomains": ["api.example.com"]}, `+creds))
		in.Settings = []string{user, repo}
		in.TrustProjectSettings, in.TLSTerminate = false, false
		mustFail(t, in, repo, "network.tlsTerminate", "--trust-project-settings")
		in.TrustProjectSettings = true
		if p := mustBuild(t, in); p.Network.TLSTerminate == nil {
			t.Fatal("trusted, termination is off")
		}
		in.TrustProjectSettings, in.TLSTerminate = false, true
		if p := mustBuild(t, in); p.Network.TLSTerminate == nil {
			t.Fatal("--tls-terminate, termination is off")
		}
	}
	// The user's own file turns termination on: the repository's {}
	// adds nothing.
	in.TLSTerminate = false
	mustWrite(t, user, srtFile(`"network": {"allowedDomains": ["api.example.com"], "tlsTerminate": {}}, `+maskToken))
	mustBuild(t, in)
	// Nothing masked: nothing to inject, termination is honoured.
	mustWrite(t, user, srtFile(`"network": {"allowedDomains": ["api.example.com"]}`))
	if p := mustBuild(t, in); p.Network.TLSTerminate == nil {
		t.Fatal("no credentials, termination is off")
	}
	// Mode deny hides, never injects.
	mustWrite(t, user, srtFile(`"network": {"allowedDomains": ["api.example.com"]}, "credentials": {"envVars": [{"name": "X", "mode": "deny"}]}`))
	mustBuild(t, in)
}
