//go:build linux

package doctor

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDoctorSnapshotHere: Snapshot reads the files and runs the probes on
// this host, where sbx's full mode runs (as root and as the unprivileged
// user that CI runs the suite as).
func TestDoctorSnapshotHere(t *testing.T) {
	s := Snapshot()
	for _, p := range []string{pathStatus, pathVersion, pathMaxUserNS, pathMountinfo} {
		if s.Files[p] == "" {
			t.Errorf("%s was not read", p)
		}
	}
	if s.UsernsError != "" || s.ProcErrno != 0 || s.LandlockABI == 0 || !s.Seccomp {
		t.Fatalf("this host must run the full mode: %+v", s)
	}
	// scripts/setup.sh makes /dev/net/tun 0666, as distributions' udev
	// does; the probe must say what an open of our own finds.
	tun, tunErr := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if tunErr == nil {
		tun.Close()
	}
	if (s.TunError == "" && s.TunErrno == 0) != (tunErr == nil) {
		t.Errorf("probe says %q, an open here says %v", s.TunError, tunErr)
	}
	exe, _ := os.Executable()
	if real, _ := filepath.EvalSymlinks(exe); s.Exe != real {
		t.Errorf("exe %q, want %q", s.Exe, real)
	}
	if d := Diagnose(s); d.ID != "ok" && !(tunErr != nil && d.ID == "capture-tun") {
		t.Errorf("diagnosis %+v", d)
	}
}
