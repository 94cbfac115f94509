package policy

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// interpDebugElf is what declared.go did with debug/elf before elfInterp.
func interpDebugElf(b []byte) (string, bool) {
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return "", false
	}
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			if prog.Filesz > 4096 {
				return "", true // the kernel refuses such a program (PATH_MAX)
			}
			v := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(v, 0); err == nil {
				return string(bytes.TrimRight(v, "\x00")), true
			}
		}
	}
	return "", true
}

// TestElfInterpAsDebugElf: elfInterp finds the loader debug/elf finds, on
// the machine's own programs and libraries (dynamic and static, sbx's test
// binary among them), on every truncation of a dynamic program's headers
// and on random corruptions of them; it never panics, and where debug/elf
// cannot parse a file it returns at most what the program headers say.
func TestElfInterpAsDebugElf(t *testing.T) {
	var files []string
	if self, err := os.Executable(); err == nil {
		files = append(files, self) // static
	}
	for _, glob := range []string{"/bin/*", "/usr/bin/*", "/usr/lib/*/*.so*", "/lib64/*"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	dynamic, checked := []byte(nil), 0
	for _, name := range files {
		if checked >= 300 && dynamic != nil {
			break
		}
		st, err := os.Stat(name)
		if err != nil || !st.Mode().IsRegular() || st.Size() > 4<<20 {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		want, ok := interpDebugElf(b)
		got := elfInterp(bytes.NewReader(b))
		if ok && got != want {
			t.Errorf("%s: elfInterp %q, debug/elf %q", name, got, want)
		}
		if ok {
			checked++
		}
		if want != "" && dynamic == nil {
			dynamic = b
		}
	}
	if checked < 10 || dynamic == nil {
		t.Fatalf("only %d ELF files (a dynamic one: %v): the comparison proves little", checked, dynamic != nil)
	}
	head := dynamic[:min(len(dynamic), 8192)]
	for n := 0; n <= len(head); n++ {
		b := head[:n]
		if want, ok := interpDebugElf(b); ok {
			if got := elfInterp(bytes.NewReader(b)); got != want {
				t.Fatalf("truncated to %d bytes: elfInterp %q, debug/elf %q", n, got, want)
			}
		} else {
			elfInterp(bytes.NewReader(b))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		b := bytes.Clone(head)
		for j := 0; j < 1+rng.IntN(4); j++ {
			b[rng.IntN(min(len(b), 1024))] = byte(rng.IntN(256))
		}
		got := elfInterp(bytes.NewReader(b))
		if want, ok := interpDebugElf(b); ok && got != want {
			t.Fatalf("corruption %d: elfInterp %q, debug/elf %q", i, got, want)
		}
	}
	t.Logf("%d ELF files compared", checked)
}

// tinyELF is a 64-bit little-endian ELF header with one program header,
// PT_INTERP naming interp.
func tinyELF(interp string) []byte {
	b := make([]byte, 64+56, 64+56+len(interp)+1)
	copy(b, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], 64) // e_phoff
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56) // e_phentsize
	le.PutUint16(b[56:], 1)  // e_phnum
	p := b[64:]
	le.PutUint32(p[0:], 3)                      // PT_INTERP
	le.PutUint64(p[8:], 120)                    // p_offset
	le.PutUint64(p[32:], uint64(len(interp)+1)) // p_filesz
	le.PutUint64(p[40:], uint64(len(interp)+1)) // p_memsz
	return append(append(b, interp...), 0)
}

// TestInterpretersELF: --reads declared grants an ELF program's loader
// only when PT_INTERP names a regular file by an absolute path, as the
// kernel would load it; a crafted program naming a directory (/root, /)
// or a relative path gets nothing.
func TestInterpretersELF(t *testing.T) {
	dir := t.TempDir()
	loader := filepath.Join(dir, "ld.so")
	if err := os.WriteFile(loader, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		interp string
		want   bool
	}{{loader, true}, {dir, false}, {"/", false}, {"ld.so", false}, {filepath.Join(dir, "missing"), false}} {
		prog := filepath.Join(dir, "prog")
		if err := os.WriteFile(prog, tinyELF(c.interp), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := elfInterp(bytes.NewReader(tinyELF(c.interp))); got != c.interp {
			t.Fatalf("elfInterp of a program naming %q: %q", c.interp, got)
		}
		got := interpreters(prog, "/usr/bin:/bin")
		if c.want && (len(got) != 1 || got[0] != c.interp) || !c.want && len(got) != 0 {
			t.Errorf("PT_INTERP %q: interpreters %q", c.interp, got)
		}
	}
}

// TestEnvProgram: the program a "#!/usr/bin/env ARG" line makes env run,
// given that the kernel passes ARG as one argument.
func TestEnvProgram(t *testing.T) {
	for arg, want := range map[string]string{
		"python3":                    "python3",
		"python3 -u":                 "", // one argument "python3 -u": no such program
		"-S python3 -u":              "python3",
		"-Spython3 -u":               "python3",
		"-S -u X evil":               "evil",
		"-S -uX evil":                "evil",
		"-S FOO=1 node":              "node",
		"-S -i -- prog":              "prog",
		"-S -C /tmp prog":            "prog",
		"-S --chdir /tmp prog":       "prog",
		"-S --chdir=/tmp prog":       "prog",
		"-vS prog x":                 "prog",
		"-iS prog":                   "prog",
		"--split-string=deno run -A": "deno",
		"--split-string deno":        "",
		"-u X evil":                  "", // -u takes " X evil"
		"-C /tmp prog":               "",
		"-i":                         "",
		"FOO=1":                      "",
		"FOO=1 prog":                 "",
		"":                           "",
		"-S":                         "",
		"-S -u":                      "",
		"-S --":                      "",
	} {
		if got := envProgram(arg); got != want {
			t.Errorf("envProgram(%q) = %q, want %q", arg, got, want)
		}
	}
}

// TestInterpretersEnv: a script's "#!/usr/bin/env ..." line grants env
// and the program env would run, found on PATH, and nothing else: in
// "-u NAME prog" the kernel's one argument is all -u's, so neither NAME
// nor prog runs (an earlier word-by-word reading granted NAME).
func TestInterpretersEnv(t *testing.T) {
	env := "/usr/bin/env"
	if _, err := os.Stat(env); err != nil {
		t.Skip("no /usr/bin/env")
	}
	dir := t.TempDir()
	for _, name := range []string{"tool", "other"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for line, want := range map[string][]string{
		"#!/usr/bin/env tool":             {env, filepath.Join(dir, "tool")},
		"#!/usr/bin/env\ttool\r":          {env, filepath.Join(dir, "tool")},
		"#!/usr/bin/env -S tool --x":      {env, filepath.Join(dir, "tool")},
		"#!/usr/bin/env -S -u tool other": {env, filepath.Join(dir, "other")},
		"#!/usr/bin/env -u tool other":    {env},
		"#!/usr/bin/env tool other":       {env},
		"#!/usr/bin/env FOO=1 tool":       {env},
	} {
		script := filepath.Join(dir, "script")
		if err := os.WriteFile(script, []byte(line+"\necho\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := interpreters(script, dir); !slices.Equal(got, want) {
			t.Errorf("%q: interpreters %q, want %q", line, got, want)
		}
	}
}
