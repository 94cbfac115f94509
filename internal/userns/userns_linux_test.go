//go:build linux

package userns

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// LastCap's prctl search must find what the kernel publishes; a search
// off by one would leave the last capability in the bounding set.
func TestLastCapMatchesProc(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Skipf("no cap_last_cap: %v", err)
	}
	want, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if got := LastCap(); got != want {
		t.Fatalf("LastCap() = %d, /proc/sys/kernel/cap_last_cap = %d", got, want)
	}
}
