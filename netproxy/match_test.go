package netproxy

import (
	"strings"
	"testing"
)

var tableCfg = Config{
	Allowed: []string{
		"example.com", "*.allowed.test", "api.github.com:443", "127.0.0.1", "[::1]:8080",
		"localhost", "10.0.0.5:5432", "Mixed.Case.ORG.", "*.deep.example.net:8443",
		"xn--bcher-kva.de", "registry.npmjs.org", "evil.allowed.test", "*.ok.test",
	},
	Denied:        []string{"evil.allowed.test", "*.bad.allowed.test", "10.0.0.5"},
	DeniedReasons: map[string]string{"evil.allowed.test": "known exfiltration endpoint"},
}

func TestDecideTable(t *testing.T) {
	p, err := New(tableCfg)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 64) + ".allowed.test"
	tests := []struct {
		host    string
		port    int
		allowed bool
		rule    string
	}{
		// exact names, case, trailing dot
		{"example.com", 443, true, "example.com"},
		{"EXAMPLE.COM", 443, true, "example.com"},
		{"example.com.", 80, true, "example.com"},
		{"Example.Com..", 80, false, RuleInvalidHost},
		{"www.example.com", 443, false, RuleDefault},
		{"badexample.com", 443, false, RuleDefault},
		{"example.com.evil.org", 443, false, RuleDefault},
		{"mixed.case.org", 443, true, "Mixed.Case.ORG."},
		{"registry.npmjs.org", 443, true, "registry.npmjs.org"},
		{"registry.npmjs.org.evil.com", 443, false, RuleDefault},
		{"xn--bcher-kva.de", 443, true, "xn--bcher-kva.de"},
		// wildcards: strict subdomains only
		{"allowed.test", 443, false, RuleDefault},
		{"a.allowed.test", 443, true, "*.allowed.test"},
		{"a.b.allowed.test", 443, true, "*.allowed.test"},
		{"A.ALLOWED.TEST.", 443, true, "*.allowed.test"},
		{"notallowed.test", 443, false, RuleDefault},
		{"allowed.test.evil", 443, false, RuleDefault},
		{"under_score.allowed.test", 443, true, "*.allowed.test"},
		{"123.allowed.test", 443, true, "*.allowed.test"},
		{"x.ok.test", 1, true, "*.ok.test"},
		{"ok.test", 443, false, RuleDefault},
		// deny wins
		{"evil.allowed.test", 443, false, "evil.allowed.test"},
		{"EVIL.allowed.test.", 443, false, "evil.allowed.test"},
		{"x.bad.allowed.test", 443, false, "*.bad.allowed.test"},
		{"y.x.bad.allowed.test", 443, false, "*.bad.allowed.test"},
		{"bad.allowed.test", 443, true, "*.allowed.test"},
		{"10.0.0.5", 5432, false, "10.0.0.5"},
		{"012.0.0.5", 5432, false, "10.0.0.5"},
		// ports
		{"api.github.com", 443, true, "api.github.com:443"},
		{"api.github.com", 80, false, RuleDefault},
		{"x.deep.example.net", 8443, true, "*.deep.example.net:8443"},
		{"x.deep.example.net", 443, false, RuleDefault},
		{"deep.example.net", 8443, false, RuleDefault},
		{"example.com", 0, false, RuleProtocol},
		{"example.com", 70000, false, RuleProtocol},
		// IPv4 literals and their numeric forms
		{"127.0.0.1", 80, true, "127.0.0.1"},
		{"127.1", 80, true, "127.0.0.1"},
		{"2130706433", 80, true, "127.0.0.1"},
		{"0x7f.1", 80, true, "127.0.0.1"},
		{"0X7F.0.0.1", 80, true, "127.0.0.1"},
		{"0177.0.0.1", 80, true, "127.0.0.1"},
		{"0x7f000001", 80, true, "127.0.0.1"},
		{"017700000001", 80, true, "127.0.0.1"},
		{"127.0.0.1.", 80, true, "127.0.0.1"},
		{"127.0.0.2", 80, false, RuleDefault},
		{"0.0.0.0", 80, false, RuleDefault},
		{"0", 80, false, RuleDefault},
		{"127.0.0.1.nip.io", 80, false, RuleDefault},
		// IPv6 literals
		{"::1", 8080, true, "[::1]:8080"},
		{"[::1]", 8080, true, "[::1]:8080"},
		{"[0:0:0:0:0:0:0:1]", 8080, true, "[::1]:8080"},
		{"::1", 80, false, RuleDefault},
		{"::ffff:127.0.0.1", 80, true, "127.0.0.1"},
		{"[::ffff:7f00:1]", 80, true, "127.0.0.1"},
		{"2001:db8::1", 443, false, RuleDefault},
		{"fe80::1%lo", 80, false, RuleInvalidHost},
		{"[::1", 8080, false, RuleInvalidHost},
		// localhost
		{"localhost", 3000, true, "localhost"},
		{"LOCALHOST.", 3000, true, "localhost"},
		{"x.localhost", 3000, false, RuleDefault},
		// refused bytes and malformed names
		{"", 443, false, RuleInvalidHost},
		{"example.com\x00", 443, false, RuleInvalidHost},
		{"exa mple.com", 443, false, RuleInvalidHost},
		{"example.com\r\n", 443, false, RuleInvalidHost},
		{"example.com\t", 443, false, RuleInvalidHost},
		{"bücher.de", 443, false, RuleInvalidHost},
		{"example.com\xff", 443, false, RuleInvalidHost},
		{"example.com:443", 443, false, RuleInvalidHost},
		{"*.allowed.test", 443, false, RuleInvalidHost},
		{"*", 443, false, RuleInvalidHost},
		{"a..allowed.test", 443, false, RuleInvalidHost},
		{".allowed.test", 443, false, RuleInvalidHost},
		{long, 443, false, RuleInvalidHost},
		{"a/b.allowed.test", 443, false, RuleInvalidHost},
		{"1.2.3.4.5", 80, false, RuleInvalidHost},
		{"256.1.1.1", 80, false, RuleInvalidHost},
		{"1.2.3.256", 80, false, RuleInvalidHost},
		{"08.0.0.1", 80, false, RuleInvalidHost},
		{"foo.123", 80, false, RuleInvalidHost},
		{"4294967296", 80, false, RuleInvalidHost},
	}
	if len(tests) < 60 {
		t.Fatalf("only %d rows", len(tests))
	}
	for _, tt := range tests {
		d := p.Decide(tt.host, tt.port)
		if d.Allowed != tt.allowed || d.Rule != tt.rule {
			t.Errorf("Decide(%q, %d) = %+v, want allowed=%v rule=%q", tt.host, tt.port, d, tt.allowed, tt.rule)
		}
		if d.Reason == "" {
			t.Errorf("Decide(%q, %d): empty reason", tt.host, tt.port)
		}
	}
	if d := p.Decide("evil.allowed.test", 443); d.Reason != "known exfiltration endpoint" {
		t.Errorf("deny reason = %q, want the deniedDomainReasons text", d.Reason)
	}
}

func TestDenyStarCoversEverything(t *testing.T) {
	p, err := New(Config{Allowed: []string{"example.com", "127.0.0.1", "[::1]"}, Denied: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"example.com", "127.0.0.1", "::1", "x.y.z"} {
		if d := p.Decide(h, 443); d.Allowed || d.Rule != "*" {
			t.Errorf("Decide(%q) = %+v, want denied by *", h, d)
		}
	}
}

func TestValidatePattern(t *testing.T) {
	tests := []struct {
		p    string
		deny bool
		ok   bool
		hint string // part of the error message
	}{
		{"example.com", false, true, ""},
		{"example.com:443", false, true, ""},
		{"Example.COM.", false, true, ""},
		{"*.example.com", false, true, ""},
		{"*.example.com:8443", false, true, ""},
		{"*.example.co.uk", false, true, ""},
		{"*.pages.github.io.example.com", false, true, ""},
		{"[::1]", false, true, ""},
		{"[::1]:8080", false, true, ""},
		{"::1", false, true, ""},
		{"127.0.0.1:80", false, true, ""},
		{"127.1", false, true, ""},
		{"localhost", false, true, ""},
		{"xn--bcher-kva.de", false, true, ""},
		{"", false, false, "empty"},
		{"*", false, false, "every destination"},
		{"*.com", false, false, "public suffix"},
		{"*.co.uk", false, false, "public suffix"},
		{"*.github.io", false, false, "public suffix"},
		{"*.test", false, false, "public suffix"},
		{"https://example.com", false, false, "scheme"},
		{"example.com/path", false, false, "path"},
		{"example.com?x=1", false, false, "path"},
		{"user@example.com", false, false, "user"},
		{"example.com:0", false, false, "port"},
		{"example.com:65536", false, false, "port"},
		{"example.com:abc", false, false, "port"},
		{"example.com:", false, false, "port"},
		{"example.com:+80", false, false, "port"},
		{"*example.com", false, false, "leading"},
		{"foo.*.com", false, false, "leading"},
		{"*.*.example.com", false, false, "leading"},
		{" example.com", false, false, "spaces"},
		{"ex ample.com", false, false, "space"},
		{"bücher.de", false, false, "xn--"},
		{"[::1", false, false, "]"},
		{"[::1]x", false, false, "after"},
		{"[example.com]", false, false, "IPv6"},
		{"*.127.0.0.1", false, false, "IP address"},
		{"*.[::1]", false, false, "IP address"},
		{"a..b.com", false, false, "empty label"},
		{"fe80::1%eth0", false, false, "zone"},
		{"1.2.3.999", false, false, "IPv4"},
		{"*.", false, false, "empty"},
		{"*", true, true, ""},
		{"*.com", true, true, ""},
		{"*.co.uk", true, true, ""},
		{"evil.com:25", true, true, ""},
		{"https://evil.com", true, false, "deniedDomains"},
		{"*.[::1]", true, false, "IP address"},
	}
	for _, tt := range tests {
		err := ValidatePattern(tt.p, tt.deny)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePattern(%q, %v) = %v, want ok=%v", tt.p, tt.deny, err, tt.ok)
			continue
		}
		if err == nil {
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.hint) || !strings.Contains(msg, quote(tt.p)) {
			t.Errorf("ValidatePattern(%q): message %q should quote the entry and mention %q", tt.p, msg, tt.hint)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	bad := []Config{
		{Allowed: []string{"*.com"}},
		{Denied: []string{"http://x.com"}},
		{DeniedResolved: []string{"10.0.0.0/33"}},
		{DeniedResolved: []string{"not-a-cidr"}},
		{Denied: []string{"a.com"}, DeniedReasons: map[string]string{"b.com": "typo"}},
	}
	for _, cfg := range bad {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	if _, err := New(Config{Denied: []string{"A.com"}, DeniedReasons: map[string]string{"a.COM": "case-insensitive key"},
		DeniedResolved: []string{"203.0.113.0/24", "2001:db8::/32", "198.51.100.1", "::ffff:192.0.2.0/120"}}); err != nil {
		t.Errorf("New: %v", err)
	}
}

func TestCanonicalize(t *testing.T) {
	tests := map[string]string{
		"Example.COM.":             "example.com",
		"127.1":                    "127.0.0.1",
		"0x7f.1":                   "127.0.0.1",
		"0177.0.0.1":               "127.0.0.1",
		"2130706433":               "127.0.0.1",
		"0x7f.0x0.0.0x1":           "127.0.0.1",
		"10.1":                     "10.0.0.1",
		"10.0.258":                 "10.0.1.2",
		"0x":                       "0.0.0.0",
		"[::FFFF:169.254.169.254]": "169.254.169.254",
		"[2001:DB8::0001]":         "2001:db8::1",
		"::":                       "::",
	}
	for in, want := range tests {
		got, err := Canonicalize(in)
		if err != nil || got != want {
			t.Errorf("Canonicalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".", "a b", "a\x7f", "1.2.3.0x100", "0x100000000", "09", "[1.2.3.4]", "]"} {
		if got, err := Canonicalize(in); err == nil {
			t.Errorf("Canonicalize(%q) = %q, want error", in, got)
		}
	}
}

func TestExactHost(t *testing.T) {
	for in, want := range map[string]string{
		"localhost": "localhost", "LocalHost.:5432": "localhost", "127.1": "127.0.0.1",
		"127.0.0.1:8080": "127.0.0.1", "[::1]:80": "::1", "::1": "::1", "example.com": "example.com",
	} {
		if got, ok := ExactHost(in); !ok || got != want {
			t.Errorf("ExactHost(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"*.example.com", "*", "http://x", ""} {
		if got, ok := ExactHost(in); ok {
			t.Errorf("ExactHost(%q) = %q, want refused", in, got)
		}
	}
}
