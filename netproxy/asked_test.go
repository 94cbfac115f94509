package netproxy

import (
	"context"
	"fmt"
	"testing"
)

// TestAskedAfterGuard: Config.Asked hears of a host only Ask allowed,
// and only once the address guard has passed it too; a host a list
// entry decides, or the guard refuses, is never reported there.
func TestAskedAfterGuard(t *testing.T) {
	var asked, denied []string
	p, err := New(Config{
		Allowed:  []string{"allowed.test", "127.0.0.1:80"},
		Resolver: testResolver(),
		Ask:      func(context.Context, string, int) bool { return true },
		Asked:    func(h string, port int) { asked = append(asked, fmt.Sprintf("%s:%d", h, port)) },
		OnDeny:   func(d Denial) { denied = append(denied, fmt.Sprintf("%s:%d %s", d.Host, d.Port, d.Rule)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, c := range []struct {
		host string
		port int
		ok   bool
	}{
		{"public.test", 443, true},    // only Ask allows it; the guard passes it
		{"allowed.test", 80, true},    // an entry allows it (and the literal the guard)
		{"loopback.test", 443, false}, // Ask allows it; the guard refuses 127.0.0.1:443
		{"loopback.test", 80, true},   // Ask allows it; 127.0.0.1:80 is listed
		{"metadata.test", 80, false},  // the guard refuses it
	} {
		_, d, err := p.vet(context.Background(), "connect", c.host, c.port)
		if err != nil || (d == nil) != c.ok {
			t.Fatalf("%s:%d: denial %+v, err %v; want allowed %v", c.host, c.port, d, err, c.ok)
		}
		if d != nil {
			p.report(*d)
		}
	}
	if got, want := fmt.Sprint(asked), "[public.test:443 loopback.test:80]"; got != want {
		t.Fatalf("Asked heard %s, want %s (denied: %v)", got, want, denied)
	}
}
