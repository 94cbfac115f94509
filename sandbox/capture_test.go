package sandbox

import (
	"net/netip"
	"strings"
	"testing"
)

// The files the command's resolver reads under capture: glibc's
// nsswitch parser takes no comment after a service list (a "# ..." there
// is read as services, and a name refused by sbx's resolver became
// EAI_SYSTEM instead of "not known"), and hosts keeps only the loopback
// names.
func TestCaptureFiles(t *testing.T) {
	in := "passwd: files systemd\nhosts:   files mdns4_minimal [NOTFOUND=return] resolve [!UNAVAIL=return] dns myhostname\nnetworks: files\n"
	got := string(nsswitchConf([]byte(in)))
	want := "passwd: files systemd\n" + nsswitchHosts + "networks: files\n"
	if got != want {
		t.Fatalf("nsswitch.conf:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "hosts:") && strings.Contains(line, "#") {
			t.Fatalf("a comment on the hosts line: %q", line)
		}
	}
	if got := string(nsswitchConf([]byte("passwd: files"))); got != "passwd: files\n"+nsswitchHosts {
		t.Fatalf("no hosts line: %q", got)
	}
	h := string(hostsFile("build-7.corp.example"))
	for _, w := range []string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost", "127.0.1.1\tbuild-7.corp.example build-7\n"} {
		if !strings.Contains(h, w) {
			t.Fatalf("hosts lacks %q:\n%s", w, h)
		}
	}
	if strings.Count(h, "\n") != 4 {
		t.Fatalf("hosts holds more than the loopback names:\n%s", h)
	}
	if r := string(resolvConf(netip.MustParseAddr("198.18.0.2"))); !strings.Contains(r, "\nnameserver 198.18.0.2\n") || strings.Contains(r, "search") {
		t.Fatalf("resolv.conf: %q", r)
	}
}

// TestCaptureFilesKept: a host file that says what the capture needs
// already is not copied (one bind less); one that names anything else,
// even on a loopback address, is.
func TestCaptureFilesKept(t *testing.T) {
	for _, c := range []struct {
		hosts string
		keep  bool
	}{
		{"127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.1.1 build-7.corp.example build-7\n", true},
		{"# comment\n127.0.0.1\tlocalhost # trailing\n", true},
		{"127.0.0.1 localhost\n127.0.0.1 sbx-capture.test\n", false},
		{"127.0.0.1 localhost\n10.0.0.5 build-7\n", false},
		{"127.0.0.1 localhost\nnot-an-address foo\n", false},
	} {
		if got := onlyLoopbackNames([]byte(c.hosts), "build-7.corp.example"); got != c.keep {
			t.Errorf("hosts %q: kept %v, want %v", c.hosts, got, c.keep)
		}
	}
	for _, c := range []struct {
		conf string
		keep bool
	}{
		{"passwd: files\nhosts:          files dns\n", true},
		{"hosts: files mdns4_minimal [NOTFOUND=return] dns\n", false},
		{"hosts: dns files\n", false},
		{"passwd: files\n", false},
		{"hosts: files dns\nhosts: files resolve\n", true},
	} {
		if got := filesThenDNS([]byte(c.conf)); got != c.keep {
			t.Errorf("nsswitch %q: kept %v, want %v", c.conf, got, c.keep)
		}
	}
}
