package learn

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// learned is a Result with one entry in every list, on a real host tree.
func learned(t *testing.T) (*fixture, *Result) {
	f := newFixture(t)
	tree(t, f.root, "home/proj/data/a", "home/proj/src/x", "home/proj/src/y", "home/.config/t/c.toml", "home/proj/out/", "home/proj/we*ird/f")
	sock := filepath.Join(f.cwd, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r := f.build(t, Observed{
		Paths: map[string]Access{
			filepath.Join(f.cwd, "data/a"):                Read,
			filepath.Join(f.cwd, "src"):                   List,
			filepath.Join(f.home, ".config/t/c.toml"):     Read,
			filepath.Join(f.cwd, "we*ird/f"):              Read,
			filepath.Join(f.cwd, "out"):                   Write | Dir,
			filepath.Join(f.cwd, "build/x"):               Create | Write,
			filepath.Join(f.home, ".cache/go-build/00/a"): Create | Write,
			sock: Connect,
		},
		Hosts: []string{"registry.test:443"},
	})
	return f, r
}

// load builds a policy from settings file with sbx's own loader,
// --reads declared, in the fixture's working directory.
func load(t *testing.T, f *fixture, file string) *policy.Policy {
	t.Helper()
	p, err := policy.Build(policy.Input{Settings: []string{file}, Reads: "declared", DryRun: true,
		Argv: []string{"true"}, Cwd: f.cwd, Home: f.home, Environ: []string{"PATH=/usr/bin:/bin", "HOME=" + f.home},
		UID: os.Getuid(), GID: os.Getgid()})
	if err != nil {
		t.Fatalf("%s does not load: %v", file, err)
	}
	return p
}

// TestFormatsLoad: each settings format loads unchanged in sbx's loader
// and grants what the Result says, and nothing learning refused.
func TestFormatsLoad(t *testing.T) {
	for _, format := range []string{"sbx", "srt", "claude"} {
		t.Run(format, func(t *testing.T) {
			f, r := learned(t)
			data, err := r.Encode(format, nil)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(f.root, "learned.json")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, d := range r.Create {
				os.MkdirAll(d, 0o700) // what the report tells the user to make
			}
			for _, d := range r.PresetPaths {
				if format != "sbx" {
					os.MkdirAll(d, 0o700)
				}
			}
			p := load(t, f, file)
			for _, g := range r.AllowRead {
				if !slices.Contains(p.Filesystem.AllowRead, g) {
					t.Errorf("allowRead lacks %s: %q\n%s", g, p.Filesystem.AllowRead, data)
				}
			}
			for _, g := range append(slices.Clone(r.AllowWrite), r.PresetPaths...) {
				if !slices.Contains(p.Filesystem.AllowWrite, g) {
					t.Errorf("allowWrite lacks %s: %q\n%s", g, p.Filesystem.AllowWrite, data)
				}
			}
			if !slices.Equal(p.Network.AllowedDomains, r.AllowedDomains) {
				t.Errorf("allowedDomains %q, want %q", p.Network.AllowedDomains, r.AllowedDomains)
			}
			if !slices.Equal(p.Network.AllowUnixSockets, r.AllowUnixSockets) {
				t.Errorf("allowUnixSockets %q, want %q", p.Network.AllowUnixSockets, r.AllowUnixSockets)
			}
			for _, d := range r.DenyRead {
				if !slices.Contains(p.Filesystem.DenyRead, d) {
					t.Errorf("denyRead lacks %s: %q\n%s", d, p.Filesystem.DenyRead, data)
				}
			}
			if len(r.AllowRead) != 4 || len(r.DenyRead) != 2 || len(r.AllowWrite) != 2 || len(r.AllowedDomains) != 1 || len(r.AllowUnixSockets) != 1 || len(r.Presets) != 1 {
				t.Errorf("fixture: read %q deny %q write %q hosts %q sockets %q presets %q", r.AllowRead, r.DenyRead, r.AllowWrite, r.AllowedDomains, r.AllowUnixSockets, r.Presets)
			}
			if strings.Contains(string(data), f.root) {
				t.Errorf("paths not relative to the project or HOME:\n%s", data)
			}
		})
	}
}

// TestAddToExisting: the learned lists are added to a settings file,
// which keeps its other keys, its order and its entries.
func TestAddToExisting(t *testing.T) {
	f, r := learned(t)
	existing := `{"network": {"deniedDomains": ["evil.test"], "allowedDomains": ["old.test"]},
 "filesystem": {"denyRead": [], "allowWrite": ["./data"], "denyWrite": []},
 "ignoreViolations": {"*": ["/x"]}}`
	data, err := r.Encode("sbx", []byte(existing))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !(strings.Index(s, `"network"`) < strings.Index(s, `"filesystem"`) && strings.Index(s, `"filesystem"`) < strings.Index(s, `"ignoreViolations"`) &&
		strings.Index(s, `"old.test"`) < strings.Index(s, `"registry.test:443"`) && strings.Contains(s, `"evil.test"`)) {
		t.Errorf("existing keys, order or entries lost:\n%s", s)
	}
	again, err := r.Encode("sbx", data)
	if err != nil || string(again) != s {
		t.Errorf("adding the same twice changed the file (%v):\n%s", err, again)
	}
	file := filepath.Join(f.root, "s.json")
	os.WriteFile(file, data, 0o644)
	os.MkdirAll(filepath.Join(f.cwd, "build"), 0o700)
	p := load(t, f, file)
	if !slices.Contains(p.Network.DeniedDomains, "evil.test") || !slices.Contains(p.Network.AllowedDomains, "old.test") {
		t.Errorf("existing lists lost: %+v", p.Network)
	}
	if _, err := r.Encode("claude", []byte(existing)); err == nil {
		t.Error("a claude format added to an srt-shaped file: no error")
	}
	if _, err := r.Encode("flags", []byte(existing)); err == nil {
		t.Error("flags added to a settings file: no error")
	}
}

// TestSrtLoads validates the srt format with srt's own config loader
// (its zod schema), and that the loader keeps every key: srt strips
// keys it does not know.
func TestSrtLoads(t *testing.T) {
	loader := "/opt/sbx-peers/srt/node_modules/@anthropic-ai/sandbox-runtime/dist/utils/config-loader.js"
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(loader); serr != nil || err != nil {
		t.Skip("srt or node is not installed")
	}
	f, r := learned(t)
	for _, format := range []string{"srt", "sbx"} {
		data, err := r.Encode(format, nil)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(f.root, format+".json")
		os.WriteFile(file, data, 0o644)
		script := `import(process.argv[1]).then(m => { const r = m.loadConfig(process.argv[2]);
  if (r.kind !== "ok") { console.log(JSON.stringify(r)); process.exit(1) }
  console.log(JSON.stringify(r.config)) })`
		out, err := exec.Command(node, "-e", script, loader, file).CombinedOutput()
		if format == "sbx" {
			// sbx's presets key is not srt's: srt keeps the rest, the
			// reason the srt format exists.
			var got map[string]any
			if err == nil && json.Unmarshal(out, &got) == nil {
				if _, ok := got["presets"]; ok {
					t.Errorf("srt kept sbx's presets key; the srt format is then not needed")
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("srt refuses the srt format: %v\n%s\n%s", err, out, data)
		}
		var got, want any
		json.Unmarshal(out, &got)
		json.Unmarshal(data, &want)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("srt's loader changed the file (stripped a key?):\n got %s\nwant %s", g, w)
		}
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(out, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the old file's 0600", st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	link := filepath.Join(dir, "link.json")
	os.Symlink(out, link)
	if err := WriteAtomic(link, []byte("x")); !errors.Is(err, ErrOutputSymlink) {
		t.Errorf("symlink output: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if err := WriteAtomic(filepath.Join(open, "p.json"), []byte("x")); !errors.Is(err, ErrOutputDirOpen) {
		t.Errorf("directory writable by others: %v", err)
	}
	os.Chmod(open, 0o777|os.ModeSticky)
	if err := WriteAtomic(filepath.Join(open, "p.json"), []byte("x")); err != nil {
		t.Errorf("sticky directory: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		os.Mkdir(other, 0o755)
		os.Chown(other, 65534, 65534)
		if err := WriteAtomic(filepath.Join(other, "p.json"), []byte("x")); !errors.Is(err, ErrOutputDirOwner) {
			t.Errorf("directory of another user: %v", err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	if err := WriteAtomic(fifo, []byte("x")); !errors.Is(err, ErrOutputNotFile) {
		t.Errorf("fifo output: %v", err)
	}
}
