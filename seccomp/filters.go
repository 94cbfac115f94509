package seccomp

//go:generate go test -run ^TestGeneratedFilters$ . -args -update

import (
	"fmt"
	"reflect"
)

// Compile returns the filter for c. The programs are compiled with
// libseccomp at development time (go generate ./seccomp; the filter's
// definition is compileLibseccomp, in libseccomp_linux_test.go) and
// embedded in filters_GOARCH.go: sbx links no libseccomp and needs no cgo,
// and no run compiles the same program again. The tests check every
// embedded program against libseccomp (TestGeneratedFilters) and run it on
// the calls the filter is about (TestEmbeddedFilters).
func Compile(c Config) (Program, error) {
	if c.UnixConnect && c.AllowUnixSockets {
		return nil, fmt.Errorf("seccomp: UnixConnect (an allow-list of Unix sockets) and AllowUnixSockets (every Unix socket) exclude each other")
	}
	if (c.ObserveWrites || c.ObserveReads) && !c.Notify {
		return nil, fmt.Errorf("seccomp: observing file calls needs Notify (a supervisor that answers)")
	}
	if c.ObserveNet && !c.Notify {
		return nil, fmt.Errorf("seccomp: observing network calls needs Notify (a supervisor that answers)")
	}
	for _, g := range generated {
		if g.config == c {
			return Program(g.program), nil
		}
	}
	return nil, fmt.Errorf("seccomp: this build has no filter for %+v on this architecture (go generate ./seccomp on it)", c)
}

// generatedProgram is one entry of the table in filters_GOARCH.go. The
// table holds only constants, so the linker lays it out as data: nothing
// is built or copied at start-up (a map of []byte was, ~80 KB in every sbx
// process, init included), and Compile copies the one program it returns.
type generatedProgram struct {
	config  Config
	program string
}

// LibraryVersion is the version of libseccomp that compiled the embedded
// programs.
func LibraryVersion() string { return generatedWith }

// Configs lists every Config: each combination of its boolean fields. go
// generate compiles a program for each one libseccomp accepts.
func Configs() []Config {
	t := reflect.TypeFor[Config]()
	n := t.NumField()
	out := make([]Config, 0, 1<<n)
	for bits := 0; bits < 1<<n; bits++ {
		var c Config
		v := reflect.ValueOf(&c).Elem()
		for i := 0; i < n; i++ {
			v.Field(i).SetBool(bits&(1<<i) != 0)
		}
		out = append(out, c)
	}
	return out
}
