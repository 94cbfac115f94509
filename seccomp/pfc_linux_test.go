//go:build linux && cgo

package seccomp

import "testing"

func TestCompiles(t *testing.T) {
	for _, c := range []Config{{}, {AllowUnixSockets: true, AllowDatagram: true}} {
		p, err := Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(p)%8 != 0 || len(p) == 0 {
			t.Fatalf("program of %d bytes", len(p))
		}
		t.Logf("%+v: %d instructions", c, len(p)/8)
	}
}
