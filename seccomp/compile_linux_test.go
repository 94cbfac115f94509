//go:build linux && cgo

package seccomp

import (
	"encoding/binary"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

var plainConfigs = []Config{
	{},
	{AllowDatagram: true},
	{AllowUnixSockets: true},
	{AllowUnixSockets: true, AllowDatagram: true},
}

type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func decode(p Program) []insn {
	var out []insn
	for i := 0; i+8 <= len(p); i += 8 {
		out = append(out, insn{
			code: binary.NativeEndian.Uint16(p[i:]),
			jt:   p[i+2], jf: p[i+3],
			k: binary.NativeEndian.Uint32(p[i+4:]),
		})
	}
	return out
}

const retK = unix.BPF_RET | unix.BPF_K

// Notify changes the action of the EPERM rules and nothing else: the
// program is the old one with every "return ERRNO(EPERM)" turned into
// "return USER_NOTIF"; ENOSYS (clone3) and the kills stay.
func TestCompileNotifyOnlySwapsActions(t *testing.T) {
	for _, c := range plainConfigs {
		old, err := Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		n := c
		n.Notify = true
		got, err := Compile(n)
		if err != nil {
			t.Fatal(err)
		}
		want := decode(old)
		swapped := 0
		for i, in := range want {
			if in.code == retK && in.k == unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
				want[i].k = unix.SECCOMP_RET_USER_NOTIF
				swapped++
			}
		}
		gi := decode(got)
		if len(gi) != len(want) {
			t.Fatalf("%+v: %d instructions, want %d", n, len(gi), len(want))
		}
		for i := range gi {
			if gi[i] != want[i] {
				t.Fatalf("%+v: instruction %d is %+v, want %+v", n, i, gi[i], want[i])
			}
		}
		var enosys, kill bool
		for _, in := range gi {
			if in.code != retK {
				continue
			}
			if in.k == unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
				t.Errorf("%+v: an EPERM return is left", n)
			}
			enosys = enosys || in.k == unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)
			kill = kill || in.k == unix.SECCOMP_RET_KILL_PROCESS
		}
		if swapped == 0 || !enosys || !kill {
			t.Errorf("%+v: swapped %d EPERM returns, ENOSYS kept %v, kill kept %v", n, swapped, enosys, kill)
		}
	}
}

func TestCompileUnixConnectExcludesAllowUnixSockets(t *testing.T) {
	if _, err := Compile(Config{UnixConnect: true, AllowUnixSockets: true}); err == nil {
		t.Fatal("UnixConnect with AllowUnixSockets compiled")
	}
	for _, c := range []Config{{UnixConnect: true}, {UnixConnect: true, Notify: true, AllowDatagram: true}} {
		p, err := Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: %d instructions", c, len(p)/8)
	}
}

// The static syscall table agrees with libseccomp for both architectures.
func TestSyscallNamesMatchLibseccomp(t *testing.T) {
	arches := map[uint32]libseccomp.ScmpArch{auditArchX86_64: libseccomp.ArchAMD64, auditArchAArch64: libseccomp.ArchARM64}
	for audit, arch := range arches {
		for nr, name := range sysNames[audit] {
			sc, err := libseccomp.GetSyscallFromNameByArch(name, arch)
			if err != nil {
				t.Logf("%s: libseccomp %s does not know %s", arch, libseccompVersion(), name)
				continue
			}
			if int(sc) != nr {
				t.Errorf("%s: %s is %d, table says %d", arch, name, sc, nr)
			}
		}
		// And every call the filter names that exists on arch is in the table.
		for _, name := range append(append([]string{}, deniedCalls...), "clone", "clone3", "unshare", "ioctl", "socket", "socketpair", "connect") {
			sc, err := libseccomp.GetSyscallFromNameByArch(name, arch)
			if err != nil || int(sc) < 0 {
				continue
			}
			if sysNames[audit][int(sc)] != name {
				t.Errorf("%s: %s (%d) missing from the table", arch, name, sc)
			}
		}
	}
}
