package darwin

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden profiles in testdata/")

// temps is what sbx passes as TempDirs on a typical Mac.
var temps = []string{"/var/folders/zz/abc123/T", "/tmp"}

var goldens = []struct {
	name string
	in   Input
}{
	{"default", Input{TempDirs: temps}},
	{"read_deny_allow", Input{
		TempDirs:  temps,
		DenyRead:  []string{"/Users/u", "/Users/u/proj/.env", "/Users/*/.ssh"},
		AllowRead: []string{"/Users/u/proj", "/Users/u/.ssh/known_hosts", "/Users/u/**/*.md"},
	}},
	{"write_allow_deny", Input{
		TempDirs:   temps,
		AllowWrite: []string{"/Users/u/proj", "/tmp/build/", "/Users/u/proj/out/*"},
		DenyWrite:  []string{"/Users/u/proj/dist/release", "/Users/u/proj/**/*.pem", "/etc/hosts"},
	}},
	{"protected", Input{TempDirs: temps, AllowWrite: []string{"/Users/u"}}},
	{"protected_gitconfig", Input{TempDirs: temps, AllowWrite: []string{"/Users/u/proj"}, AllowGitConfig: true}},
	{"protected_allowed", Input{TempDirs: temps, AllowWrite: []string{"/Users/u/proj"}, AllowProtected: []string{".vscode", ".npmrc", ".git/config", ".claude"}}},
	{"network_proxy", Input{
		TempDirs:               temps,
		ProxyPorts:             []int{3128, 1080, 3128},
		AllowLocalBinding:      true,
		WeakerNetworkIsolation: true,
	}},
	{"unix_sockets", Input{
		TempDirs:         temps,
		ProxyPorts:       []int{3128},
		AllowUnixSockets: []string{"/var/run/docker.sock", "/Users/u/.ssh/agent/*.sock"},
	}},
	{"unix_sockets_all", Input{TempDirs: temps, AllowAllUnixSockets: true}},
	{"pty", Input{TempDirs: temps, AllowPty: true}},
	{"mach_apple_events", Input{
		TempDirs:         temps,
		AllowMachLookup:  []string{"org.example.*", "com.example.svc"},
		AllowAppleEvents: true,
	}},
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			in := g.in
			in.Tag = "sbx_golden"
			got, err := Profile(in)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := checkProfile(got); err != nil {
				t.Fatalf("malformed: %v", err)
			}
			file := filepath.Join("testdata", g.name+".sb")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("profile differs from %s (go test -update rewrites it):\n%s", file, lineDiff(string(want), got))
			}
		})
	}
}

// TestGoldenFilesWellFormed reads the files themselves, not just what the
// generator produces now.
func TestGoldenFilesWellFormed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.sb"))
	if err != nil || len(files) != len(goldens) {
		t.Fatalf("found %d golden files, want %d (%v)", len(files), len(goldens), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checkProfile(string(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n- " + a + "\n+ " + b
		}
	}
	return "(no line differs)"
}

func TestDeterministic(t *testing.T) {
	in := richInput()
	a, err := Profile(in)
	if err != nil {
		t.Fatal(err)
	}
	rev := func(s []string) []string { s = slices.Clone(s); slices.Reverse(s); return s }
	in.AllowRead, in.DenyRead = rev(in.AllowRead), rev(in.DenyRead)
	in.AllowWrite, in.DenyWrite = rev(in.AllowWrite), rev(in.DenyWrite)
	in.AllowUnixSockets, in.AllowMachLookup = rev(in.AllowUnixSockets), rev(in.AllowMachLookup)
	in.DenyRead = append(in.DenyRead, in.DenyRead[0]) // a duplicate changes nothing
	b, err := Profile(in)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("list order changed the profile:\n%s", lineDiff(a, b))
	}
}

func TestProfileErrors(t *testing.T) {
	base := func(mod func(*Input)) Input {
		in := Input{Tag: "t"}
		mod(&in)
		return in
	}
	for name, in := range map[string]Input{
		"empty tag":        {},
		"tag with quote":   {Tag: `a"b`},
		"tag with space":   {Tag: "a b"},
		"tag too long":     {Tag: strings.Repeat("a", 200)},
		"relative path":    base(func(in *Input) { in.AllowWrite = []string{"proj"} }),
		"tilde path":       base(func(in *Input) { in.DenyRead = []string{"~/.ssh"} }),
		"empty path":       base(func(in *Input) { in.AllowRead = []string{""} }),
		"NUL in path":      base(func(in *Input) { in.DenyWrite = []string{"/a\x00b"} }),
		"NUL in temp dir":  base(func(in *Input) { in.TempDirs = []string{"/tmp/\x00"} }),
		"bad UTF-8":        base(func(in *Input) { in.DenyRead = []string{"/a\xff"} }),
		"long path":        base(func(in *Input) { in.DenyRead = []string{"/" + strings.Repeat("a", 1200)} }),
		"relative socket":  base(func(in *Input) { in.AllowUnixSockets = []string{"docker.sock"} }),
		"port 0":           base(func(in *Input) { in.ProxyPorts = []int{0} }),
		"port 70000":       base(func(in *Input) { in.ProxyPorts = []int{70000} }),
		"mach *":           base(func(in *Input) { in.AllowMachLookup = []string{"*"} }),
		"mach inner *":     base(func(in *Input) { in.AllowMachLookup = []string{"com.*.x"} }),
		"mach empty":       base(func(in *Input) { in.AllowMachLookup = []string{""} }),
		"mach NUL":         base(func(in *Input) { in.AllowMachLookup = []string{"a\x00"} }),
		"mach long prefix": base(func(in *Input) { in.AllowMachLookup = []string{strings.Repeat("a", 1200) + "*"} }),
	} {
		if _, err := Profile(in); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v does not wrap ErrInput", name, err)
		}
	}
}

// doc.go documents the Mach baseline; keep the two in step.
func TestDocListsMachBaseline(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range machBaseline {
		if !strings.Contains(string(doc), "//\t"+s.name+" ") {
			t.Errorf("doc.go does not list %s", s.name)
		}
	}
}

func TestTempDirErrorNamesTheList(t *testing.T) {
	_, err := Profile(Input{Tag: "t", TempDirs: []string{"tmp"}})
	if err == nil || !strings.Contains(err.Error(), "tempDirs") {
		t.Errorf("err = %v", err)
	}
}

// The rules the issue names, checked by content rather than by golden.
func TestProfileSemantics(t *testing.T) {
	prof, err := Profile(Input{
		Tag:        "sem",
		TempDirs:   []string{"/tmp"},
		AllowWrite: []string{"/Users/u/proj"},
		DenyWrite:  []string{"/Users/u/proj/a/b/c"},
		ProxyPorts: []int{8080},
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := checkProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]bool{}
	for _, f := range doc.forms {
		forms[render(f)] = true
	}
	for _, want := range []string{
		`(deny default (with message "sem"))`,
		`(deny network* (with message "sem"))`,
		`(allow network-outbound (remote ip "localhost:8080"))`,
		`(allow file-write* (subpath "/Users/u/proj") (subpath "/private/tmp"))`,
	} {
		if !forms[want] {
			t.Errorf("missing %s", want)
		}
	}
	for _, bad := range []string{`(allow network-outbound (local ip`, `(allow network*)`, `"/tmp"`} {
		if strings.Contains(prof, bad) {
			t.Errorf("profile contains %s", bad)
		}
	}
	// The directories between the root and the denied path may not be
	// renamed, nor replaced by a symlink; the root itself is left alone.
	for _, want := range []string{
		`(literal "/Users/u/proj/a")`, `(literal "/Users/u/proj/a/b")`,
		`(require-all (literal "/Users/u/proj/a/b") (require-not (vnode-type DIRECTORY)))`,
	} {
		if !strings.Contains(prof, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(prof, `(literal "/Users/u/proj")`) || strings.Contains(prof, `(literal "/Users/u")`) {
		t.Error("a writable root or a directory above it is listed as a protected parent")
	}
	// Denies come after every broad allow: nothing may re-open them.
	lastDeny, firstFileDeny := 0, -1
	for i, f := range doc.forms {
		if f.items[0].text == "deny" && strings.HasPrefix(f.items[1].text, "file-") {
			lastDeny = i
			if firstFileDeny < 0 {
				firstFileDeny = i
			}
		}
	}
	for i, f := range doc.forms {
		if i > firstFileDeny && f.items[0].text == "allow" && f.items[1].text != "file-read-metadata" {
			t.Errorf("allow after the file denies: %s", render(f))
		}
	}
	if lastDeny != len(doc.forms)-1 {
		t.Errorf("the profile does not end with a deny")
	}
}
