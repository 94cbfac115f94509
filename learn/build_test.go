package learn

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// tree makes files (a trailing "/" makes a directory) under root.
func tree(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture is a host: HOME at root/home, the project at root/home/proj.
type fixture struct {
	root, home, cwd string
	start           *policy.Policy
}

func newFixture(t *testing.T) *fixture {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{root: root, home: filepath.Join(root, "home"), cwd: filepath.Join(root, "home", "proj")}
	tree(t, root, "home/proj/", "home/.aws/credentials")
	f.start = &policy.Policy{}
	f.start.Filesystem.DenyRead = []string{filepath.Join(f.home, ".aws/credentials")}
	return f
}

func (f *fixture) build(t *testing.T, ob Observed) *Result {
	t.Helper()
	r, err := Build(Start{Policy: f.start, Argv: []string{"true"}, Environ: []string{"PATH=/usr/bin:/bin", "HOME=" + f.home}, Cwd: f.cwd, Home: f.home}, ob)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) abs(rel []string) []string {
	out := make([]string, len(rel))
	for i, p := range rel {
		out[i] = filepath.Join(f.root, p)
	}
	return out
}

func TestCollapse(t *testing.T) {
	cases := []struct {
		name       string
		files      []string
		touched    map[string]Access // relative to root
		read, wrt  []string          // relative to root
		deny       []string          // relative to root
		refusedHas string
	}{
		{
			name:    "every file of a directory read: the directory",
			files:   []string{"home/proj/data/a", "home/proj/data/b", "home/proj/src/x"},
			touched: map[string]Access{"home/proj/data/a": Read, "home/proj/data/b": Read},
			read:    []string{"home/proj/data"},
		},
		{
			name:  "a node_modules-like tree read in part: the files, and the packages read whole",
			files: []string{"home/proj/node_modules/a/index.js", "home/proj/node_modules/a/package.json", "home/proj/node_modules/b/index.js", "home/proj/node_modules/b/README.md", "home/proj/node_modules/b/package.json"},
			touched: map[string]Access{"home/proj/node_modules/a/index.js": Read, "home/proj/node_modules/a/package.json": Read | Stat,
				"home/proj/node_modules/b/index.js": Read, "home/proj/node_modules/b/package.json": Stat},
			read: []string{"home/proj/node_modules/a", "home/proj/node_modules/b/index.js", "home/proj/node_modules/b/package.json"},
		},
		{
			name:    "the whole project read: the working directory, never HOME",
			files:   []string{"home/proj/a", "home/proj/b/c"},
			touched: map[string]Access{"home/proj/a": Read, "home/proj/b/c": Read, "home/.aws/credentials": Stat},
			read:    []string{"home/proj"},
		},
		{
			name:    "everything in HOME read: its entries, never HOME",
			files:   []string{"home/.config/t/c", "home/.profile"},
			touched: map[string]Access{"home/.config/t/c": Read, "home/.profile": Read},
			read:    []string{"home/.config", "home/.profile"},
		},
		{
			name:    "a directory holding a credential mask is never granted whole",
			files:   []string{"home/.aws/config"},
			touched: map[string]Access{"home/.aws/config": Read},
			read:    []string{"home/.aws/config"},
		},
		{
			name:    "an ancestor of the working directory is never granted",
			files:   []string{"home/proj/a", "home/x"},
			touched: map[string]Access{"home/x": Read, "home/proj/a": Read},
			read:    []string{"home/proj", "home/x"},
		},
		{
			name:    "a listed directory in the project whose entries were not read: granted, its entries denied",
			files:   []string{"home/proj/lib/a", "home/proj/lib/b"},
			touched: map[string]Access{"home/proj/lib": List},
			read:    []string{"home/proj/lib"},
			deny:    []string{"home/proj/lib/a", "home/proj/lib/b"},
		},
		{
			name:       "a listed directory outside the project whose entries were not read is not granted",
			files:      []string{"home/other/lib/a", "home/other/lib/b"},
			touched:    map[string]Access{"home/other/lib": List},
			refusedHas: "other/lib",
		},
		{
			name:    "an empty directory listed is granted",
			files:   []string{"home/proj/empty/", "home/proj/x"},
			touched: map[string]Access{"home/proj/empty": List},
			read:    []string{"home/proj/empty"},
		},
		{
			name:    "a file written in place: the file; a write implies a read",
			files:   []string{"home/proj/out/a", "home/proj/out/b"},
			touched: map[string]Access{"home/proj/out/a": Read | Write, "home/proj/out/b": Read},
			wrt:     []string{"home/proj/out/a"},
			read:    []string{"home/proj/out/b"},
		},
		{
			name:    "every file of a directory written: the directory",
			files:   []string{"home/proj/out/a", "home/proj/out/b", "home/proj/src"},
			touched: map[string]Access{"home/proj/out/a": Write, "home/proj/out/b": Write},
			wrt:     []string{"home/proj/out"},
		},
		{
			name:    "a file created in the project: its directory",
			files:   []string{"home/proj/src"},
			touched: map[string]Access{"home/proj/cover.out": Create | Write},
			wrt:     []string{"home/proj"},
		},
		{
			name:    "a file removed: its directory",
			files:   []string{"home/proj/cache/old", "home/proj/cache/keep", "home/proj/src"},
			touched: map[string]Access{"home/proj/cache/old": Remove},
			wrt:     []string{"home/proj/cache"},
		},
		{
			name:       "a file created in HOME: refused, HOME is never writable",
			touched:    map[string]Access{"home/.tool_history": Create | Write},
			refusedHas: "--allow-write " + "HOME",
		},
		{
			name:       "a protected name is never granted",
			files:      []string{"home/proj/.git/hooks/"},
			touched:    map[string]Access{"home/proj/.git/hooks/pre-commit": Create | Write},
			refusedHas: "protected name .git/hooks",
		},
		{
			name:    "a directory listed, its sources read and its build directory written: the directory",
			files:   []string{"home/proj/app/Main.java", "home/proj/app/out/Main.class", "home/proj/README"},
			touched: map[string]Access{"home/proj/app": List, "home/proj/app/Main.java": Read, "home/proj/app/out/Main.class": Write},
			read:    []string{"home/proj/app"},
			wrt:     []string{"home/proj/app/out"},
		},
		{
			name:    "a project directory listed, one entry read and one not: the directory, the other denied",
			files:   []string{"home/proj/app/test_a.py", "home/proj/app/README"},
			touched: map[string]Access{"home/proj/app": List, "home/proj/app/test_a.py": Read},
			read:    []string{"home/proj/app"},
			deny:    []string{"home/proj/app/README"},
		},
		{
			name:    "the project listed, read in part, below too: what was not touched is denied, at any depth",
			files:   []string{"home/proj/a.py", "home/proj/README", "home/proj/src/m.py", "home/proj/src/secret.py", "home/proj/docs/x.md"},
			touched: map[string]Access{"home/proj": List, "home/proj/a.py": Read, "home/proj/src/m.py": Read},
			read:    []string{"home/proj"},
			deny:    []string{"home/proj/README", "home/proj/docs", "home/proj/src/secret.py"},
		},
		{
			name:       "a credential's refusal is never granted",
			touched:    map[string]Access{"home/.aws/credentials": Read},
			refusedHas: "file-read",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			tree(t, f.root, c.files...)
			ob := Observed{Paths: map[string]Access{}}
			for p, a := range c.touched {
				ob.Paths[filepath.Join(f.root, p)] = a
			}
			if strings.Contains(c.name, "credential's refusal") {
				ob.Refused = []Refusal{{Kind: "file-read", What: filepath.Join(f.home, ".aws/credentials"), Rule: "credential mask", Grant: "--allow-read ~/.aws/credentials"}}
			}
			r := f.build(t, ob)
			if got, want := r.AllowRead, f.abs(c.read); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("allowRead %q, want %q", got, want)
			}
			if got, want := r.AllowWrite, f.abs(c.wrt); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("allowWrite %q, want %q", got, want)
			}
			if got, want := r.DenyRead, f.abs(c.deny); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("denyRead %q, want %q", got, want)
			}
			var rep bytes.Buffer
			r.Report(&rep, nil)
			want := strings.ReplaceAll(c.refusedHas, "HOME", f.home)
			want = strings.ReplaceAll(want, "home/proj", filepath.Join(f.root, "home/proj"))
			if c.refusedHas != "" && !strings.Contains(rep.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, rep.String())
			}
			for _, g := range append(append([]string(nil), r.AllowRead...), r.AllowWrite...) {
				if g == "/" || g == f.home || policy.Within(f.home, g) || g == f.root || policy.Within(filepath.Join(f.home, ".aws/credentials"), g) {
					t.Errorf("granted %s", g)
				}
			}
		})
	}
}

func TestCreatedDirectory(t *testing.T) {
	f := newFixture(t)
	tree(t, f.root, "home/proj/src/main.go", "home/proj/README")
	r := f.build(t, Observed{Paths: map[string]Access{
		filepath.Join(f.cwd, "build/bin/app"): Create | Write,
		filepath.Join(f.cwd, "build/obj/a.o"): Create | Write,
		filepath.Join(f.cwd, "src/main.go"):   Read,
		filepath.Join(f.home, ".newtool"):     Create | Dir,
	}})
	if want := []string{filepath.Join(f.home, ".newtool"), filepath.Join(f.cwd, "build")}; !slices.Equal(r.AllowWrite, want) || !slices.Equal(r.Create, want) {
		t.Errorf("allowWrite %q create %q, want both %q", r.AllowWrite, r.Create, want)
	}
	if want := []string{filepath.Join(f.cwd, "src")}; !slices.Equal(r.AllowRead, want) {
		t.Errorf("allowRead %q, want %q", r.AllowRead, want)
	}
}

func TestSubtractsStartAndRuntime(t *testing.T) {
	f := newFixture(t)
	tree(t, f.root, "home/proj/given/a", "home/proj/new", "home/w/x")
	f.start.Filesystem.AllowRead = []string{filepath.Join(f.cwd, "given")}
	f.start.Filesystem.AllowWrite = []string{filepath.Join(f.home, "w")}
	f.start.Network.AllowedDomains = []string{"*.example.com", "fixed.test:443"}
	f.start.Network.AllowUnixSockets = []string{"/run/known.sock"}
	prog, _ := filepath.EvalSymlinks("/usr/bin/true")
	r := f.build(t, Observed{
		Paths: map[string]Access{
			filepath.Join(f.cwd, "given/a"): Read, filepath.Join(f.cwd, "new"): Read,
			filepath.Join(f.home, "w/x"): Read | Write, prog: Exec, "/etc/hosts": Read,
			"/proc/self/status": Read, "/dev/null": Write, "/tmp/scratch": Create,
			"/run/known.sock": Connect, "/run/new.sock": Connect,
		},
		Hosts: []string{"fixed.test:443", "fixed.test:80", "a.example.com:443", "example.com:443", "b.test:443"},
	})
	if want := []string{filepath.Join(f.cwd, "new")}; !slices.Equal(r.AllowRead, want) {
		t.Errorf("allowRead %q, want %q", r.AllowRead, want)
	}
	if len(r.AllowWrite) != 0 {
		t.Errorf("allowWrite %q, want none", r.AllowWrite)
	}
	if want := []string{"b.test:443", "example.com:443", "fixed.test:80"}; !slices.Equal(r.AllowedDomains, want) {
		t.Errorf("hosts %q, want %q", r.AllowedDomains, want)
	}
	if want := []string{"/run/new.sock"}; !slices.Equal(r.AllowUnixSockets, want) {
		t.Errorf("sockets %q, want %q", r.AllowUnixSockets, want)
	}
}

func TestPresetCaches(t *testing.T) {
	f := newFixture(t)
	tree(t, f.root, "home/.cache/go-build/00/a", "home/go/pkg/mod/m@v1/x.go")
	r := f.build(t, Observed{Paths: map[string]Access{
		filepath.Join(f.home, ".cache/go-build/00/a"): Write,
		filepath.Join(f.home, "go/pkg/mod/m@v1/x.go"): Read,
	}})
	if !slices.Equal(r.Presets, []string{"go"}) || len(r.AllowWrite)+len(r.AllowRead) != 0 {
		t.Errorf("presets %q, read %q, write %q; want only the go preset", r.Presets, r.AllowRead, r.AllowWrite)
	}
	if want := []string{filepath.Join(f.home, ".cache/go-build"), filepath.Join(f.home, "go/pkg/mod")}; !slices.Equal(r.PresetPaths, want) {
		t.Errorf("preset paths %q, want %q", r.PresetPaths, want)
	}
}

// TestStable: the same observations give the same bytes in every
// format, whatever order they were noted in.
func TestStable(t *testing.T) {
	f := newFixture(t)
	var files []string
	for _, n := range []string{"q", "b", "z", "a", "m"} {
		files = append(files, "home/proj/d"+n+"/f", "home/proj/d"+n+"/g")
	}
	tree(t, f.root, files...)
	mk := func(order []string) Observed {
		rec := NewRecorder()
		for _, p := range order {
			rec.Path(filepath.Join(f.root, p), Read)
		}
		rec.Host("z.test:443")
		rec.Host("a.test:443")
		return rec.Observed()
	}
	rev := slices.Clone(files)
	slices.Reverse(rev)
	one, two := f.build(t, mk(files[:len(files)-1])), f.build(t, mk(rev[1:]))
	for _, format := range Formats() {
		a, err := one.Encode(format, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := two.Encode(format, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds differ:\n%s\n%s", format, a, b)
		}
	}
}

func TestReportFailedRun(t *testing.T) {
	r := &Result{Failed: true, Status: 3, AllowRead: []string{"/x/y"}, Refused: []Refusal{{Kind: "file-read", What: "/h/.ssh/id_rsa", Rule: "credential mask", Grant: "--allow-read /h/.ssh/id_rsa"}}}
	var b bytes.Buffer
	r.Report(&b, []string{"sbx", "--settings", "p.json", "--reads", "declared", "--fail-on-violation", "--", "make", "it all"})
	for _, want := range []string{"learned from a failed run (exit 3)", "read    /x/y", "refused, not granted", "grant with --allow-read /h/.ssh/id_rsa", "replay: sbx --settings p.json --reads declared --fail-on-violation -- make 'it all'"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "a listing not read through") {
		t.Errorf("the listing advice without a listing:\n%s", b.String())
	}
	// A listing not read through gets one line of advice.
	r.Refused = append(r.Refused, Refusal{Kind: "file-read", What: "/p/pkg", Rule: RuleListed, Grant: "--allow-read /p/pkg"})
	b.Reset()
	r.Report(&b, nil)
	if strings.Count(b.String(), "learn from a clean run") != 1 {
		t.Errorf("want one line of advice for the listing:\n%s", b.String())
	}
}

// TestSysGranted: /sys is the host's (the normal view shows it, --reads
// declared shows only the attributes runtimes read at start), so another
// kernel attribute the command reads is granted, and a /sys directory it
// lists is granted whole; the runtime's attributes are not repeated; the
// view's own /proc, /dev and /tmp never are.
func TestSysGranted(t *testing.T) {
	attr, dir := "/sys/kernel/mm/ksm/run", "/sys/kernel/mm"
	if _, err := os.Stat(attr); err != nil {
		t.Skipf("no %s: %v", attr, err)
	}
	if rt := "/sys/kernel/mm/transparent_hugepage/enabled"; exists(rt) {
		f := newFixture(t)
		if r := f.build(t, Observed{Paths: map[string]Access{rt: Read}}); len(r.AllowRead) != 0 {
			t.Errorf("an attribute of the declared runtime is granted: %q", r.AllowRead)
		}
	}
	f := newFixture(t)
	r := f.build(t, Observed{Paths: map[string]Access{
		attr: Read, dir: List, "/proc/self/status": Read, "/dev/null": Read, "/tmp/x": Read,
	}})
	if want := []string{dir}; !slices.Equal(r.AllowRead, want) {
		t.Errorf("allowRead %q, want %q", r.AllowRead, want)
	}
	r = f.build(t, Observed{Paths: map[string]Access{attr: Read}})
	if want := []string{attr}; !slices.Equal(r.AllowRead, want) {
		t.Errorf("allowRead %q, want %q", r.AllowRead, want)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
