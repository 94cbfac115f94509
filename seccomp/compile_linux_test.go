//go:build linux && cgo

package seccomp

import (
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

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
		// The tests' own numbers (extraNumbers) are libseccomp's too.
		goarch := map[uint32]string{auditArchX86_64: "amd64", auditArchAArch64: "arm64"}[audit]
		for name, nr := range extraNumbers[goarch] {
			if sc, err := libseccomp.GetSyscallFromNameByArch(name, arch); err != nil || int(sc) != int(nr) {
				t.Errorf("%s: %s is %d (%v), extraNumbers says %d", arch, name, sc, err, nr)
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
