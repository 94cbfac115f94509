//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// treeHash is every path under dir with its mode, size and contents'
// hash: "byte-identical" means equal treeHash.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel := strings.TrimPrefix(p, dir)
		if rel == "/.cache/sbx" {
			return filepath.SkipDir // sbx's own scan cache, written by sbx outside the sandbox
		}
		if rel == "/.cache" && onlySbxCache(p) {
			return nil
		}
		h := ""
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err == nil {
				s := sha256.New()
				io.Copy(s, f)
				f.Close()
				h = fmt.Sprintf("%x", s.Sum(nil))
			}
		}
		lines = append(lines, fmt.Sprintf("%s %v %d %s", rel, info.Mode(), info.Size(), h))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// onlySbxCache says whether dir holds nothing but sbx's scan cache
// (sbx makes $HOME/.cache/sbx on the host before the sandbox starts).
func onlySbxCache(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) == 1 && ents[0].Name() == "sbx"
}

// discardTree is a directory (in /var/tmp, which the sandbox sees as the
// host has it) with files to change, delete and rename, a secret and a
// git repository without hooks.
func discardTree(t *testing.T) string {
	d := hostTempDir(t)
	writeFile(t, filepath.Join(d, "keep.txt"), "orig\n")
	writeFile(t, filepath.Join(d, "sub", "gone.txt"), "bye\n")
	writeFile(t, filepath.Join(d, "old-name"), "moved\n")
	writeFile(t, filepath.Join(d, "over.txt"), "to be replaced\n")
	writeFile(t, filepath.Join(d, "secret"), "S3CRET\n")
	os.MkdirAll(filepath.Join(d, ".git"), 0o755)
	return d
}

func TestDiscardWrites(t *testing.T) {
	d := discardTree(t)
	before := treeHash(t, d)
	vio := filepath.Join(t.TempDir(), "v.jsonl")
	r := sh(t, runOpts{dir: d}, `echo new > made.txt && echo more >> keep.txt && rm sub/gone.txt && mv old-name new-name && printf n > t && mv t over.txt && mkdir -p dir/x && echo y > dir/x/f
		cat keep.txt made.txt; cat secret 2>/dev/null; echo hook > .git/hooks/pre-commit 2>/dev/null && echo HOOKED; true`,
		"--discard-writes", d, "--deny-read", filepath.Join(d, "secret"), "--violations", vio)
	wantCode(t, r, 0)
	if r.stdout != "orig\nmore\nnew\n" {
		t.Fatalf("the writes inside should succeed and be read back: %s", r)
	}
	if after := treeHash(t, d); after != before {
		t.Fatalf("the host tree changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	got := map[string]string{}
	b, _ := os.ReadFile(vio)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Kind, Action, Source, Path, Detail string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if rec.Kind != "file-write" || rec.Action != "discard" || rec.Source != "overlay" {
			t.Fatalf("record %+v", rec)
		}
		got[strings.TrimPrefix(rec.Path, d)] = rec.Detail
	}
	want := map[string]string{"/made.txt": "created", "/keep.txt": "modified", "/sub/gone.txt": "deleted",
		"/old-name": "deleted", "/new-name": "created", "/over.txt": "renamed-over", "/dir": "created", "/dir/x": "created", "/dir/x/f": "created"}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q (all: %v)", p, got[p], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("records for %v, want exactly %v", got, want)
	}
	// --fail-on-violation: 123 on a discarded write, 0 on none.
	r = sh(t, runOpts{dir: d}, `echo x > y`, "--discard-writes", d, "--fail-on-violation", "--quiet-violations")
	wantCode(t, r, 123)
	r = sh(t, runOpts{dir: d}, `cat keep.txt >/dev/null`, "--discard-writes", d, "--fail-on-violation")
	wantCode(t, r, 0)
	// Control: without the flag the same write is refused.
	r = sh(t, runOpts{dir: d}, `echo x > y`)
	if r.code == 0 {
		t.Fatalf("control: %s", r)
	}
	if after := treeHash(t, d); after != before {
		t.Fatal("the host tree changed")
	}
	wantRefused(t, []string{"--discard-writes", d, "--weaker-nested"}, []string{"--discard-writes", filepath.Join(d, "keep.txt")}, []string{"--discard-writes", "/tmp"})
}

// TestDiscardWritesKilled: a run whose sbx is killed with SIGKILL
// leaves the host as it was.
func TestDiscardWritesKilled(t *testing.T) {
	d := discardTree(t)
	before := treeHash(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The command says "ready" only once its writes are there, as it
	// sees them; sbx is killed then, not after a guessed delay.
	cmd := exec.CommandContext(ctx, sbxBin, "--discard-writes", d, "--", "/bin/sh", "-c",
		"cd "+d+" && echo a > w1 && rm keep.txt && touch ready && test \"$(cat w1)\" = a && test ! -e keep.txt && echo ready && sleep 30")
	cmd.Dir = d
	cmd.Env = hermeticEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the command's writes did not happen inside the run (no \"ready\")")
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("no \"ready\" from the command in 20 s")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && treeHash(t, d) != before {
		time.Sleep(100 * time.Millisecond)
	}
	if after := treeHash(t, d); after != before {
		t.Fatalf("after SIGKILL the host tree changed:\n%s\nvs\n%s", before, after)
	}
}

// TestUndeclaredWritesDiscard: a go build with --undeclared-writes
// discard and no allowWrite builds and runs; its writes (the binary, the
// build cache in HOME) are reported and gone afterwards.
func TestUndeclaredWritesDiscard(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	mod := hostTempDir(t)
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/app\n\ngo 1.21\n")
	writeFile(t, filepath.Join(mod, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built in a discard overlay\") }\n")
	before := treeHash(t, mod)
	home := hostTempDir(t) // a HOME of the test's own, so its build cache is fresh
	vio := filepath.Join(t.TempDir(), "v.jsonl")
	env := append(hermeticEnv(), "HOME="+home, "GOCACHE=", "GOTOOLCHAIN=local", "GOFLAGS=", "XDG_CACHE_HOME=")
	r := sh(t, runOpts{dir: mod, env: env}, gobin+" build -o app . && ./app", "--undeclared-writes", "discard", "--violations", vio)
	if r.code != 0 || r.stdout != "built in a discard overlay\n" {
		t.Fatalf("%s", r)
	}
	recs, _ := os.ReadFile(vio)
	if !strings.Contains(string(recs), `"path":"`+filepath.Join(mod, "app")+`","detail":"created"`) || !strings.Contains(string(recs), filepath.Join(home, ".cache", "go-build")) {
		t.Fatalf("records should list the binary and the build cache: %.2000s", recs)
	}
	if after := treeHash(t, mod); after != before {
		t.Fatal("the module directory changed on the host")
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 && !(len(ents) == 1 && onlySbxCache(filepath.Join(home, ".cache"))) {
		t.Fatalf("HOME changed on the host: %v", ents)
	}
	// Control: the same build without it fails on the read-only view.
	if r = sh(t, runOpts{dir: mod, env: env}, gobin+" build -o app ."); r.code == 0 {
		t.Fatalf("control: %s", r)
	}
	wantRefused(t, []string{"--undeclared-writes", "sometimes"})
}

// TestSaveChanges: --save-changes keeps exactly the changes: the new and
// modified files under files/<path>, and changes.json with each change's
// kind, type, mode and size, deletions included; a protected name sbx made
// and a masked file are not in it.
func TestSaveChanges(t *testing.T) {
	d := discardTree(t)
	before := treeHash(t, d)
	saved := filepath.Join(hostTempDir(t), "review")
	r := sh(t, runOpts{dir: d}, `printf new > made.txt && printf more >> keep.txt && rm sub/gone.txt && ln -s keep.txt link && printf s > shut && chmod 0 shut; echo x > secret 2>/dev/null; true`,
		"--discard-writes", d, "--deny-read", filepath.Join(d, "secret"), "--save-changes", saved, "--quiet-violations")
	wantCode(t, r, 0)
	if st, err := os.Stat(saved); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the directory should be made 0700: %v %v", st, err)
	}
	if b, _ := os.ReadFile(filepath.Join(saved, "files", d, "made.txt")); string(b) != "new" {
		t.Fatalf("made.txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(saved, "files", d, "keep.txt")); string(b) != "orig\nmore" {
		t.Fatalf("keep.txt: %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(saved, "files", d, "link")); l != "keep.txt" {
		t.Fatalf("link: %q", l)
	}
	var manifest []struct {
		Path, Kind, Type, Mode string
		Size                   int64
	}
	b, _ := os.ReadFile(filepath.Join(saved, "changes.json"))
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range manifest {
		got[strings.TrimPrefix(m.Path, d)] = fmt.Sprintf("%s %s %s %d", m.Kind, m.Type, m.Mode, m.Size)
	}
	want := map[string]string{
		"/made.txt":     "created file 0644 3",
		"/keep.txt":     "modified file 0644 9",
		"/sub/gone.txt": "deleted   0",
		"/link":         "created symlink 0777 0",
		"/shut":         "created file 0000 1", // read all the same (as the owner, when not root)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q (all %v)", p, got[p], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("manifest %v, want exactly %v", got, want)
	}
	if after := treeHash(t, d); after != before {
		t.Fatal("the host tree changed")
	}
	// An existing directory, or no discard region: refused, nothing made.
	wantRefused(t, []string{"--discard-writes", d, "--save-changes", saved}, []string{"--save-changes", filepath.Join(filepath.Dir(saved), "other")})
	if _, err := os.Stat(filepath.Join(filepath.Dir(saved), "other")); err == nil {
		t.Fatal("a refused run made the directory")
	}
}

// TestDiscardWritesNpm: `npm test` of a package whose test writes into
// HOME passes under --discard-writes HOME alone, and HOME is unchanged.
func TestDiscardWritesNpm(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm not installed")
	}
	home := hostTempDir(t)
	pkg := hostTempDir(t)
	writeFile(t, filepath.Join(pkg, "package.json"), `{"name": "homewriter", "version": "1.0.0", "scripts": {"test": "node test.js"}}`)
	writeFile(t, filepath.Join(pkg, "test.js"), "const fs = require('fs'), os = require('os'), path = require('path');\n"+
		"fs.mkdirSync(path.join(os.homedir(), '.cache', 'tool'), {recursive: true});\n"+
		"fs.writeFileSync(path.join(os.homedir(), '.cache', 'tool', 'state'), 'x');\n"+
		"console.log('test wrote its state');\n")
	before := treeHash(t, home)
	env := append(hermeticEnv(), "HOME="+home, "npm_config_update_notifier=false")
	r := sbx(t, runOpts{dir: pkg, env: env}, "--discard-writes", home, "--", npm, "test")
	if r.code != 0 || !strings.Contains(r.stdout, "test wrote its state") {
		t.Fatalf("npm test under --discard-writes HOME: %s", r)
	}
	if !strings.Contains(r.stderr, "file-write") {
		t.Errorf("the discarded writes should be summarised: %s", r.stderr)
	}
	if after := treeHash(t, home); after != before {
		t.Fatalf("HOME changed on the host:\n%s", after)
	}
	// Control: without it the test fails on the read-only HOME.
	if r = sbx(t, runOpts{dir: pkg, env: env}, "--", npm, "test"); r.code == 0 {
		t.Fatalf("control: %s", r)
	}
}

// The --save-changes directory must be out of the command's reach: in a
// writable place the command could plant links for sbx to follow when it
// writes the saved tree.
func TestSaveChangesOutsideWritablePlaces(t *testing.T) {
	d := discardTree(t)
	w := hostTempDir(t)
	saved := filepath.Join(w, "saved")
	r := sbx(t, runOpts{dir: d}, "--allow-write", w, "--discard-writes", d, "--save-changes", saved, "--", "/bin/true")
	if r.code != 125 || !strings.Contains(r.stderr, "where the sandboxed command can write") {
		t.Fatalf("--save-changes inside --allow-write: %s", r)
	}
	if _, err := os.Stat(saved); err == nil {
		t.Fatal("the refused directory was made")
	}
}

// openLong opens p (absolute, any length) one component at a time,
// following no symbolic link: the path syscalls refuse names longer than
// PATH_MAX.
func openLong(t *testing.T, p string) (*os.File, error) {
	t.Helper()
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i, part := range parts {
		flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, part, flags, 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", part, err)
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), p), nil
}

// savedManifest reads changes.json of a --save-changes directory, by path.
func savedManifest(t *testing.T, saved string) map[string]struct {
	Kind, Type, Mode, DroppedBits string
	Size                          int64
} {
	t.Helper()
	var manifest []struct {
		Path, Kind, Type, Mode, DroppedBits string
		Size                                int64
	}
	b, err := os.ReadFile(filepath.Join(saved, "changes.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		Kind, Type, Mode, DroppedBits string
		Size                          int64
	}{}
	for _, m := range manifest {
		out[m.Path] = struct {
			Kind, Type, Mode, DroppedBits string
			Size                          int64
		}{m.Kind, m.Type, m.Mode, m.DroppedBits, m.Size}
	}
	return out
}

// TestDiscardLongPaths: changes under paths longer than PATH_MAX (4096)
// are reported and saved like any other: the walks of the upper layers
// and of the saved tree go one directory at a time.
func TestDiscardLongPaths(t *testing.T) {
	bash := needTool(t, "bash")
	d := discardTree(t)
	// On the host: a tree 45 levels of 100-byte names deep (about 4.5 KiB)
	// with a file to modify and one to delete at the bottom.
	name := strings.Repeat("n", 100)
	deep := `i=0; while [ $i -lt 45 ]; do mkdir -p ` + name + ` && cd ` + name + ` || exit 1; i=$((i+1)); done; `
	if out, err := exec.Command(bash, "-c", "cd "+d+" && "+deep+"echo old > mod && echo bye > del && chmod -R a+rX "+d).CombinedOutput(); err != nil {
		t.Fatalf("making the deep host tree: %v %s", err, out)
	}
	before := treeHash(t, d)
	deepPath := d + strings.Repeat("/"+name, 45)
	// A small plan, and a large one (a writable tree of 1,100
	// repositories beside the region: once the Go init's, now the one
	// raw start's, with a program of thousands of ops).
	for _, plan := range []string{"small", "large"} {
		t.Run(plan, func(t *testing.T) {
			var flags []string
			if plan == "large" {
				flags = []string{"--allow-write", manyRepos(t, 1100)}
			}
			saved := filepath.Join(hostTempDir(t), "review")
			vio := filepath.Join(t.TempDir(), "v.jsonl")
			r := sbx(t, runOpts{dir: d}, append(flags, "--discard-writes", d, "--save-changes", saved, "--violations", vio, "--",
				bash, "-c", deep+`echo more >> mod && rm del && mkdir new && echo deep > new/f && chmod 0 new/f && ln -s mod link && cat mod
		for i in $(seq 30); do echo $i > new/g$i; done; grep '^Threads:' /proc/1/status >&2`)...)
			if r.code != 0 || r.stdout != "old\nmore\n" || !strings.Contains(r.stderr, "Threads:\t1\n") {
				t.Fatalf("%s", r)
			}
			checkLongPaths(t, d, name, deepPath, saved, vio)
		})
	}
	if after := treeHash(t, d); after != before {
		t.Fatal("the host tree changed")
	}
}

func checkLongPaths(t *testing.T, d, name, deepPath, saved, vio string) {
	t.Helper()
	// Reported: one record per change at the bottom, as many as there
	// are (record fields are cut at 4 KiB, so their paths end in "…").
	b, _ := os.ReadFile(vio)
	details := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Path, Detail string }
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Path, d+"/"+name) {
			details[rec.Detail]++
		}
	}
	// (30 files more than fit the 64 KiB lines of the status pipe.)
	if want := map[string]int{"modified": 1, "deleted": 1, "created": 33}; fmt.Sprint(details) != fmt.Sprint(want) {
		t.Fatalf("records under the deep tree: %v, want %v\n%.3000s", details, want, b)
	}
	// Saved: changes.json has every change with its whole path, and
	// files/<path> holds the new and modified files.
	m := savedManifest(t, saved)
	want := map[string]string{
		deepPath + "/mod":   "modified file 0644 9",
		deepPath + "/del":   "deleted   0",
		deepPath + "/new":   "created directory 0755 0",
		deepPath + "/new/f": "created file 0000 5",
		deepPath + "/link":  "created symlink 0777 0",
	}
	for p, w := range want {
		e := m[p]
		if got := fmt.Sprintf("%s %s %s %d", e.Kind, e.Type, e.Mode, e.Size); got != w {
			t.Errorf("changes.json %s…%s: %q, want %q", p[:20], p[len(p)-10:], got, w)
		}
	}
	if len(m) != len(want)+30 {
		t.Errorf("changes.json has %d entries, want %d", len(m), len(want)+30)
	}
	for p, content := range map[string]string{deepPath + "/mod": "old\nmore\n", deepPath + "/new/f": "deep\n"} {
		if isRoot() || !strings.HasSuffix(p, "/f") { // a 0000 file is read back by root only
			f, err := openLong(t, filepath.Join(saved, "files")+p)
			if err != nil {
				t.Fatalf("saved %s: %v", p[len(p)-5:], err)
			}
			got, _ := io.ReadAll(f)
			f.Close()
			if string(got) != content {
				t.Errorf("saved %s: %q, want %q", p[len(p)-5:], got, content)
			}
		}
	}
}

// TestSaveChangesModes: changes.json records each entry's mode as it was
// saved, and no saved entry is setuid, setgid or sticky (a saved tree is
// for the caller to review and apply; the bits dropped are named in
// droppedBits).
func TestSaveChangesModes(t *testing.T) {
	d := discardTree(t)
	saved := filepath.Join(hostTempDir(t), "review")
	r := sh(t, runOpts{dir: d}, `umask 022; printf x > suid; chmod 4755 suid 2>/dev/null && echo suid-set; mkdir sgid; chmod 2775 sgid 2>/dev/null && echo sgid-set
		mkdir sticky && chmod 1777 sticky
		umask 0 && printf y > wide && mkdir -m 700 priv && printf z > priv/in && chmod 640 keep.txt`,
		"--discard-writes", d, "--save-changes", saved, "--quiet-violations")
	wantCode(t, r, 0)
	// Set-id bits are refused at the system call (seccomp), so none
	// reaches the saved tree; the sticky bit is kept from it.
	if r.stdout != "" {
		t.Errorf("a set-id chmod went through in the sandbox: %s", r)
	}
	m := savedManifest(t, saved)
	want := map[string]string{
		"/suid": "0644 ", "/sgid": "0755 ", "/sticky": "0777 1000",
		"/wide": "0666 ", "/priv": "0700 ", "/priv/in": "0666 ", "/keep.txt": "0640 ",
	}
	for p, w := range want {
		e, ok := m[d+p]
		if !ok {
			t.Errorf("%s not in changes.json", p)
			continue
		}
		if got := e.Mode + " " + e.DroppedBits; got != w {
			t.Errorf("%s: recorded %q, want %q", p, got, w)
		}
		st, err := os.Lstat(filepath.Join(saved, "files", d, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%04o", uint32(st.Mode().Perm())|map[bool]uint32{true: 0o4000}[st.Mode()&os.ModeSetuid != 0]|map[bool]uint32{true: 0o2000}[st.Mode()&os.ModeSetgid != 0]|map[bool]uint32{true: 0o1000}[st.Mode()&os.ModeSticky != 0]); got != e.Mode {
			t.Errorf("%s: saved as %s, recorded as %s", p, got, e.Mode)
		}
	}
}

// TestProtectedNamesInHomeInsideRegion: a missing ~/.profile (and the
// other protected names) is pinned wherever HOME lies, also when HOME is
// no writable root of its own but lies inside one: under /var/tmp with
// --undeclared-writes discard (HOME's region is folded into /var/tmp's),
// or under an --allow-write directory, where the write would be real.
func TestProtectedNamesInHomeInsideRegion(t *testing.T) {
	parent := hostTempDir(t)
	home := filepath.Join(parent, "home")
	os.MkdirAll(home, 0o755)
	cwd := hostTempDir(t)
	env := append(hermeticEnv(), "HOME="+home)
	script := `cd "$HOME"; for n in .profile .bashrc .zshrc; do echo evil >> $n 2>/dev/null && echo WROTE $n; done; mkdir -p .git/hooks 2>/dev/null && echo hook > .git/hooks/pre-commit 2>/dev/null && echo WROTE hook; echo ok > notes && echo wrote-notes`
	for _, flags := range [][]string{{"--undeclared-writes", "discard"}, {"--allow-write", parent}} {
		vio := filepath.Join(t.TempDir(), "v.jsonl")
		r := sh(t, runOpts{dir: cwd, env: env}, script, append(flags, "--violations", vio)...)
		if r.code != 0 || strings.Contains(r.stdout, "WROTE") || !strings.Contains(r.stdout, "wrote-notes") {
			t.Fatalf("%q: protected names in HOME must stay unwritable, other files writable: %s", flags, r)
		}
		for _, n := range []string{".profile", ".bashrc", ".zshrc", ".git"} {
			if _, err := os.Lstat(filepath.Join(home, n)); err == nil {
				t.Fatalf("%q: %s was made on the host", flags, n)
			}
		}
		// The pins sbx made are not the command's writes.
		if b, _ := os.ReadFile(vio); strings.Contains(string(b), "/.profile") || (flags[0] == "--undeclared-writes") != strings.Contains(string(b), home+"/notes") {
			t.Fatalf("%q: records: %s", flags, b)
		}
		os.Remove(filepath.Join(home, "notes"))
	}
}
