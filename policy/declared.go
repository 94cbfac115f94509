package policy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DeclaredRuntime are the system directories that --reads declared
// leaves readable besides what the caller declares: the programs and
// libraries of a minimal runtime, /etc (less the built-in credential
// masks, which stay), and the kernel's attributes that runtimes read as
// they start: the CPUs online (glibc's sysconf, Node, Java, Rust), the
// cgroup limits (Go's GOMAXPROCS, Node's heap, the JVM's container
// sizing) and the huge page sizes (Go, the JVM). Those hold no one's
// data; without them a Go, Node or Java program under --reads declared
// made refused reads on every start.
var DeclaredRuntime = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	"/sys/devices/system/cpu", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage", "/sys/kernel/mm/hugepages"}

// declaredRuntime is what --reads declared adds to allowRead: the
// DeclaredRuntime directories that exist, the program argv[0] names (as
// PATH finds it) and its interpreter (a script's #! line, with env's
// argument looked up too, or an ELF program's PT_INTERP), where they lie
// outside those directories.
func declaredRuntime(argv, environ []string, cwd string) []pathEntry {
	var out []pathEntry
	add := func(p, why string) {
		out = append(out, pathEntry{path: p, literal: true, optional: true, from: why})
	}
	for _, d := range DeclaredRuntime {
		if _, err := os.Lstat(d); err == nil {
			add(d, "--reads declared")
		}
	}
	if len(argv) == 0 {
		return out
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	seen := map[string]bool{}
	var visit func(prog string, level int)
	visit = func(prog string, level int) {
		real, err := filepath.EvalSymlinks(prog)
		if err != nil || seen[real] || level > 2 {
			return
		}
		seen[real] = true
		if !WithinAny(real, DeclaredRuntime) {
			add(real, "--reads declared: the program "+prog)
		}
		for _, next := range interpreters(real, pathVar) {
			visit(next, level+1)
		}
	}
	if prog := findProgram(argv[0], pathVar, cwd); prog != "" {
		visit(prog, 0)
	}
	return out
}

// findProgram finds name as execvp would, or "".
func findProgram(name, pathVar, cwd string) string {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(cwd, name)
		}
		if st, err := os.Stat(name); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			return ""
		}
		return name
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = cwd
		}
		cand := filepath.Join(dir, name)
		if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return cand
		}
	}
	return ""
}

// interpreters are the programs the kernel or env(1) runs to run file: a
// script's #! interpreter (and, for "#!/usr/bin/env NAME", NAME on PATH),
// or an ELF program's dynamic loader.
func interpreters(file, pathVar string) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := f.Read(head)
	head = head[:n]
	if rest, ok := bytes.CutPrefix(head, []byte("#!")); ok {
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		// As the kernel reads the line: the interpreter up to the first
		// blank, then everything after it as one argument.
		interp, arg, _ := strings.Cut(strings.TrimSpace(strings.ReplaceAll(string(line), "\t", " ")), " ")
		if interp == "" || findProgram(interp, pathVar, "/") == "" || !filepath.IsAbs(interp) {
			return nil // not a program the kernel would run
		}
		out := []string{interp}
		if filepath.Base(interp) == "env" {
			if name := envProgram(strings.TrimSpace(arg)); name != "" {
				if p := findProgram(name, pathVar, "/"); p != "" {
					out = append(out, p)
				}
			}
		}
		return out
	}
	// The kernel runs only an absolute interpreter path that names a
	// regular file; anything else in PT_INTERP (a directory such as /root
	// in a crafted program) is no reason to grant a read.
	if interp := elfInterp(f); filepath.IsAbs(interp) {
		if st, err := os.Stat(interp); err == nil && st.Mode().IsRegular() {
			return []string{interp}
		}
	}
	return nil
}

// envProgram is the program "#!/usr/bin/env ARG" makes env run, or "".
// The kernel hands env the rest of the line as one argument, so a plain
// name is the program and anything else runs none (options alone, an
// assignment, a name with a blank in it), except -S (--split-string=),
// which splits the rest into words: the first that is neither an option
// (-u and -C take the next word) nor NAME=VALUE, or the word after --,
// is the program. env's quoting and ${VAR} in -S are not modelled; a
// program misread here is only not granted, and whatever is granted is
// a regular executable file (findProgram) outside the masks.
func envProgram(arg string) string {
	var split string
	switch {
	case arg == "":
		return ""
	case strings.HasPrefix(arg, "--split-string="):
		split = strings.TrimPrefix(arg, "--split-string=")
	case strings.HasPrefix(arg, "--"):
		return ""
	case strings.HasPrefix(arg, "-"):
		i := strings.IndexFunc(arg[1:], func(r rune) bool { return r != 'i' && r != '0' && r != 'v' })
		if i < 0 || arg[1+i] != 'S' {
			return "" // options only, or one (-u, -C) that swallows the rest
		}
		split = arg[2+i:]
	case strings.ContainsAny(arg, " =\t"):
		return ""
	default:
		return arg
	}
	words := strings.Fields(split)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			if i+1 < len(words) {
				return words[i+1]
			}
			return ""
		case w == "-u" || w == "-C" || w == "--unset" || w == "--chdir":
			i++ // the option's argument
		case strings.HasPrefix(w, "-") || strings.Contains(w, "="):
		default:
			return w
		}
	}
	return ""
}

// PasswdHome returns uid's home directory from /etc/passwd, or "".
func PasswdHome(uid int) string {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	return passwdHome(string(b), uid)
}

// passwdHome finds uid's home in the text of a passwd file: the sixth of
// seven ':'-separated fields, absolute, on the first line with that uid.
// (It runs on every start: strings.Cut, not a Split per line.)
func passwdHome(passwd string, uid int) string {
	want := strconv.Itoa(uid)
	for rest := passwd; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		var f [7]string
		n := 0
		for n < 6 {
			var ok bool
			if f[n], line, ok = strings.Cut(line, ":"); !ok {
				break
			}
			n++
		}
		if n < 6 { // fewer than seven fields
			continue
		}
		if f[2] == want && filepath.IsAbs(f[5]) {
			return filepath.Clean(f[5])
		}
	}
	return ""
}

// presetWrites are the writable cache directories of the named presets.
// A missing one is marked to be created (mode 0700, as the tool itself
// would on its first run) when the command runs; one that cannot be
// looked at is skipped with a note: a preset is a convenience, never a
// reason not to run.
func presetWrites(names, environ []string, home string, notes *[]string) ([]pathEntry, error) {
	var out []pathEntry
	for _, name := range names {
		dirs, err := PresetDirs(name, environ, home)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			e := pathEntry{path: d.Path, literal: true, optional: true, from: "preset " + name}
			_, err := os.Stat(d.Path)
			switch {
			case err == nil:
				*notes = append(*notes, fmt.Sprintf("preset %s: allowWrite += %s (%s)", name, d.Path, d.Why))
			case !os.IsNotExist(err):
				*notes = append(*notes, fmt.Sprintf("preset %s: %s (%s) skipped: %v", name, d.Path, d.Why, unwrapPathErr(err)))
				continue
			case d.File:
				e.create, e.createFile = true, true
				*notes = append(*notes, fmt.Sprintf("preset %s: allowWrite += %s (%s), missing: created empty (mode 0644 less the umask) when the command runs", name, d.Path, d.Why))
			default:
				e.create = true
				*notes = append(*notes, fmt.Sprintf("preset %s: allowWrite += %s (%s), missing: created mode 0700 when the command runs", name, d.Path, d.Why))
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// DeclaredReads is what --reads declared leaves readable besides the
// caller's allowRead, for a command argv run with environ in cwd: the
// DeclaredRuntime directories that exist, the program and its
// interpreters (see declaredRuntime). Paths are cleaned, not resolved
// further than the program lookup does. sbx learn uses it so that a
// learned policy never repeats the runtime.
func DeclaredReads(argv, environ []string, cwd string) []string {
	var out []string
	for _, e := range declaredRuntime(argv, environ, cwd) {
		out = append(out, filepath.Clean(e.path))
	}
	return out
}
