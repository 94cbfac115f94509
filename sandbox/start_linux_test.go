//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sbx-sh/sbx/internal/rawexec"
	"golang.org/x/sys/unix"
)

// PID 1 zeroes sbx's argument area (a --set-env value may be a masked
// credential, and /proc/PID/cmdline needs no ptrace access). The area is
// the kernel's whether os.Args still point into it or a caller replaced
// them: /proc/self/stat gives the same bounds.
func TestArgArea(t *testing.T) {
	start, end, err := argArea()
	if err != nil || end <= start {
		t.Fatalf("argArea: %#x %#x %v", start, end, err)
	}
	s2, e2, err := statArgArea()
	if err != nil || s2 != start || e2 != end {
		t.Fatalf("/proc/self/stat: %#x-%#x %v, os.Args: %#x-%#x", s2, e2, err, start, end)
	}
	saved := os.Args
	defer func() { os.Args = saved }()
	os.Args = append([]string{"replaced"}, saved[1:]...)
	s3, e3, err := argArea()
	if err != nil || s3 != start || e3 != end {
		t.Fatalf("with os.Args replaced: %#x-%#x %v, want %#x-%#x", s3, e3, err, start, end)
	}
}

// A plan too large for one start says what to narrow.
func TestTooLarge(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w (at %q)", rawexec.ErrTooLong, "mount view: ro /w/r1/.git"),
		fmt.Errorf("mount view: stub /w/r1/.bashrc: %w", unix.EMFILE),
	} {
		got := tooLarge(err)
		if !errors.Is(got, err) || !strings.Contains(got.Error(), "narrow") {
			t.Errorf("tooLarge(%v) = %v", err, got)
		}
	}
	if other := errors.New("x"); tooLarge(other) != other || tooLarge(nil) != nil {
		t.Error("tooLarge changed another error")
	}
	// A view over the kernel's fs.mount-max: its mount fails ENOSPC.
	full := &rawexec.OpError{Label: "mount view: ro /w/r9/.git (protected)", Nr: unix.SYS_MOUNT, Errno: unix.ENOSPC}
	if m := opMessage(full); !strings.HasPrefix(m, full.Label) || !strings.Contains(m, "fs.mount-max") || !strings.Contains(m, "narrow") {
		t.Errorf("opMessage(ENOSPC mount) = %q", m)
	}
	other := &rawexec.OpError{Label: "chdir", Nr: unix.SYS_CHDIR, Errno: unix.ENOENT}
	if m := opMessage(other); m != "chdir: no such file or directory" {
		t.Errorf("opMessage(chdir) = %q", m)
	}
}

// TestRelayingGivesCPUs: the supervisor's GOMAXPROCS is left alone
// until its first relayed connection, and is from then on half the
// runtime's default (on two or three CPUs one P), or with TLS
// termination the whole default (relaying), set once.
func TestRelayingGivesCPUs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("needs no GOMAXPROCS in the environment")
	}
	runtime.SetDefaultGOMAXPROCS()
	dflt := runtime.GOMAXPROCS(0)
	defer runtime.SetDefaultGOMAXPROCS()
	defer relayAllCPUs.Store(false)
	for _, terminate := range []bool{false, true} {
		want := relayProcs(dflt)
		if terminate {
			want = dflt
		}
		relayOnce = sync.Once{}
		relayAllCPUs.Store(terminate)
		// Not the one P the start leaves: relaying must set its own
		// number, so that neither leaving GOMAXPROCS alone nor the
		// wrong share passes on two CPUs.
		runtime.GOMAXPROCS(3)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rl := relayListener{l}
		if n := runtime.GOMAXPROCS(0); n != 3 {
			t.Fatalf("GOMAXPROCS %d before any connection, want 3", n)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := rl.Accept()
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		c.Close()
		rl.Close()
		if n := runtime.GOMAXPROCS(0); n != want {
			t.Fatalf("TLS termination %v: GOMAXPROCS %d after the first relayed connection, want %d (default %d, %d CPUs)", terminate, n, want, dflt, runtime.NumCPU())
		}
		runtime.GOMAXPROCS(5)
		relaying() // once per run: a later connection changes nothing
		if n := runtime.GOMAXPROCS(0); n != 5 {
			t.Fatalf("GOMAXPROCS %d after a second connection, want it left alone", n)
		}
	}
}

// TestRelayProcs: half the default, never none.
func TestRelayProcs(t *testing.T) {
	for dflt, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 16: 8} {
		if got := relayProcs(dflt); got != want {
			t.Errorf("relayProcs(%d) = %d, want %d", dflt, got, want)
		}
	}
}
