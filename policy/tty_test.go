package policy

import (
	"runtime"
	"strings"
	"testing"
)

// TestTty: when the command gets a terminal of its own (Process.Tty):
// always with --tty (which turns allowPty on), with allowPty only on a
// caller's terminal, on Linux and outside the weaker mode; --tty is
// refused where it cannot be given.
func TestTty(t *testing.T) {
	linux := runtime.GOOS == "linux"
	for _, c := range []struct {
		name                    string
		tty, allowPty, terminal bool
		weaker                  bool
		managed                 string
		wantTty, wantPty        bool
		wantErr                 string
	}{
		{name: "--tty", tty: true, wantTty: true, wantPty: true},
		{name: "--tty on a terminal", tty: true, terminal: true, wantTty: true, wantPty: true},
		{name: "--allow-pty on a terminal", allowPty: true, terminal: true, wantTty: linux, wantPty: true},
		{name: "--allow-pty without a terminal", allowPty: true, wantPty: true},
		{name: "a terminal without --allow-pty", terminal: true},
		{name: "--allow-pty on a terminal, weaker", allowPty: true, terminal: true, weaker: true, wantPty: true},
		{name: "--tty, weaker", tty: true, weaker: true, wantErr: "--tty needs the full sandbox"},
		{name: "--tty, managed allowPty false", tty: true, managed: `{"sandbox": {"allowPty": false}}`, wantErr: "managed settings set allowPty false"},
		{name: "settings allowPty on a terminal", terminal: true, managed: `{"sandbox": {"allowPty": true}}`, wantTty: linux, wantPty: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := input(t)
			if c.managed != "" {
				in = managedInput(t, c.managed)
			}
			in.Tty, in.AllowPty, in.Terminal, in.WeakerNested = c.tty, c.allowPty, c.terminal, c.weaker
			p, err := Build(in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want an error with %q, got %v", c.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Process.Tty != c.wantTty || p.AllowPty != c.wantPty {
				t.Errorf("Process.Tty %v, AllowPty %v; want %v, %v", p.Process.Tty, p.AllowPty, c.wantTty, c.wantPty)
			}
		})
	}
}
