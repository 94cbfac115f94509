package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// linkTree is a fake HOME holding .ssh/id_rsa and .config/autostart, a
// working directory, and a directory outside both for links.
type linkTree struct {
	in          Input
	home, out   string
	ssh, autost string
}

func newLinkTree(t *testing.T) linkTree {
	t.Helper()
	in := input(t)
	lt := linkTree{in: in, home: in.Home, out: t.TempDir()}
	lt.ssh = filepath.Join(lt.home, ".ssh")
	lt.autost = filepath.Join(lt.home, ".config", "autostart")
	writeTestFile(t, filepath.Join(lt.ssh, "id_rsa"))
	if err := os.MkdirAll(lt.autost, 0o755); err != nil {
		t.Fatal(err)
	}
	return lt
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func notesHave(p *Policy, s string) bool { return strings.Contains(strings.Join(p.Notes, "\n"), s) }

// TestGrantThroughLinkInWorkingTree: a grant whose literal path crosses a
// symlink in the working tree that points outside it is refused, one
// line naming the link and its target, from flags and settings files; a
// Claude Code rule or a glob match is skipped with a note. A link inside
// the tree to inside the tree is fine.
func TestGrantThroughLinkInWorkingTree(t *testing.T) {
	lt := newLinkTree(t)
	w := lt.in.Cwd
	symlink(t, lt.ssh, filepath.Join(w, "src"))
	symlink(t, lt.autost, filepath.Join(w, "out"))
	symlink(t, lt.home, filepath.Join(w, "a", "b")) // deeper: a/b/.ssh/id_rsa
	if err := os.MkdirAll(filepath.Join(w, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real", filepath.Join(w, "inside"))
	for _, tc := range []struct {
		name string
		set  func(in *Input)
		link string
	}{
		{"--allow-read src", func(in *Input) { in.AllowRead = []string{"src"} }, "src"},
		{"--allow-read src/id_rsa", func(in *Input) { in.AllowRead = []string{"./src/id_rsa"} }, "src"},
		{"--allow-read a/b/.ssh/id_rsa", func(in *Input) { in.AllowRead = []string{"a/b/.ssh/id_rsa"} }, "a/b"},
		{"--allow-write out", func(in *Input) { in.AllowWrite = []string{"out"} }, "out"},
		{"--discard-writes out", func(in *Input) { in.DiscardWrites = []string{"out"} }, "out"},
		{"--reads declared --allow-read src", func(in *Input) { in.Reads = "declared"; in.AllowRead = []string{"src"} }, "src"},
		{"absolute", func(in *Input) { in.AllowRead = []string{filepath.Join(w, "src")} }, "src"},
	} {
		in := lt.in
		tc.set(&in)
		_, err := Build(in)
		want := "crosses the symlink " + filepath.Join(w, tc.link) + ", which lies in the working tree and points outside it"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "name the target itself") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", tc.name, err, want)
		}
	}
	// Settings files (srt and Claude Code's sandbox.filesystem).
	for _, body := range []string{
		`{"network":{},"filesystem":{"allowRead":["./src"]}}`,
		`{"network":{},"filesystem":{"allowWrite":["./out"]}}`,
		`{"network":{},"filesystem":{"discardWrites":["./out"]}}`,
		`{"sandbox":{"filesystem":{"allowWrite":["./out"]}}}`,
	} {
		f := filepath.Join(t.TempDir(), "s.json")
		os.WriteFile(f, []byte(body), 0o644)
		in := lt.in
		in.Settings = []string{f}
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "crosses the symlink") {
			t.Errorf("%s: got %v", body, err)
		}
	}
	// Claude Code rules and globs: skipped with a note.
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, []byte(`{"permissions":{"allow":["Edit(./out)","Edit(./inside)"],"additionalDirectories":["./out"]}}`), 0o644)
	in := lt.in
	in.Settings = []string{f}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Filesystem.AllowWrite, lt.autost) || !notesHave(p, "crosses the symlink "+filepath.Join(w, "out")) {
		t.Errorf("Claude rules: allowWrite %q, notes %q", p.Filesystem.AllowWrite, p.Notes)
	}
	if !slices.Contains(p.Filesystem.AllowWrite, filepath.Join(w, "real")) {
		t.Errorf("a link inside the tree to inside it was dropped: %q", p.Filesystem.AllowWrite)
	}
	// A preset's cache named through such a link: skipped with a note.
	symlink(t, lt.ssh, filepath.Join(w, "gocache"))
	in = lt.in
	in.Presets = []string{"go"}
	in.Environ = append(in.Environ, "GOCACHE="+filepath.Join(w, "gocache"))
	if p, err = Build(in); err != nil || slices.Contains(p.Filesystem.AllowWrite, lt.ssh) || !notesHave(p, "crosses the symlink "+filepath.Join(w, "gocache")) {
		t.Errorf("preset: %v %q %q", err, p.Filesystem.AllowWrite, p.Notes)
	}
	in = lt.in
	in.AllowWrite = []string{"./*"}
	if p, err = Build(in); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Filesystem.AllowWrite, lt.autost) || !slices.Contains(p.Filesystem.AllowWrite, filepath.Join(w, "real")) || !notesHave(p, "match "+filepath.Join(w, "out")+" skipped") {
		t.Errorf("glob: allowWrite %q, notes %q", p.Filesystem.AllowWrite, p.Notes)
	}
}

// TestMaskThroughLink: a grant outside the working tree that reaches a
// built-in credential mask through a symlink does not re-open it
// (dropped, with the note); one whose literal path is the mask or lies
// inside it does, under the mask's literal or resolved spelling.
func TestMaskThroughLink(t *testing.T) {
	lt := newLinkTree(t)
	symlink(t, lt.ssh, filepath.Join(lt.out, "keys"))
	symlink(t, lt.home, filepath.Join(lt.out, "a", "b"))
	for _, tc := range []struct {
		name string
		set  func(in *Input)
	}{
		{"allowRead", func(in *Input) { in.AllowRead = []string{filepath.Join(lt.out, "keys")} }},
		{"allowRead inside", func(in *Input) { in.AllowRead = []string{filepath.Join(lt.out, "keys", "id_rsa")} }},
		{"allowRead at depth", func(in *Input) { in.AllowRead = []string{filepath.Join(lt.out, "a/b/.ssh/id_rsa")} }},
		{"allowWrite", func(in *Input) { in.AllowWrite = []string{filepath.Join(lt.out, "keys")} }},
		{"reads declared", func(in *Input) { in.Reads = "declared"; in.AllowRead = []string{filepath.Join(lt.out, "keys")} }},
	} {
		in := lt.in
		tc.set(&in)
		p, err := Build(in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Contains(p.Filesystem.DenyRead, lt.ssh) {
			t.Errorf("%s: the mask %s was lifted: %q", tc.name, lt.ssh, p.Filesystem.DenyRead)
		}
		for _, l := range [][]string{p.Filesystem.AllowRead, p.Filesystem.AllowWrite, p.Filesystem.DiscardWrites} {
			for _, a := range l {
				if Within(a, lt.ssh) {
					t.Errorf("%s: %s still granted", tc.name, a)
				}
			}
		}
		if !notesHave(p, "re-opening a credential mask takes its literal path") {
			t.Errorf("%s: no note: %q", tc.name, p.Notes)
		}
	}
	// Settings and Claude Code rules, from outside the tree.
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, []byte(`{"permissions":{"allow":["Edit(//`+strings.TrimPrefix(filepath.Join(lt.out, "keys"), "/")+`)"],"additionalDirectories":["`+filepath.Join(lt.out, "keys")+`"]}}`), 0o644)
	in := lt.in
	in.Settings = []string{f}
	p, err := Build(in)
	if err != nil || slices.Contains(p.Filesystem.AllowWrite, lt.ssh) || !notesHave(p, "re-opening a credential mask") {
		t.Errorf("Claude rules: %v %q %q", err, p.Filesystem.AllowWrite, p.Notes)
	}

	// A preset's cache reaching the mask through a link elsewhere.
	in = lt.in
	in.Presets = []string{"go"}
	in.Environ = append(in.Environ, "GOCACHE="+filepath.Join(lt.out, "keys"))
	if p, err = Build(in); err != nil || slices.Contains(p.Filesystem.AllowWrite, lt.ssh) || !notesHave(p, "re-opening a credential mask") {
		t.Errorf("preset: %v %q %q", err, p.Filesystem.AllowWrite, p.Notes)
	}

	// The literal path re-opens.
	in = lt.in
	in.AllowRead = []string{"~/.ssh"}
	if p, err = Build(in); err != nil || slices.Contains(p.Filesystem.DenyRead, lt.ssh) {
		t.Errorf("--allow-read ~/.ssh did not re-open it: %v %q", err, p.Filesystem.DenyRead)
	}
	in.AllowRead = []string{"~/.ssh/id_rsa"}
	if p, err = Build(in); err != nil || !slices.Contains(p.Filesystem.AllowRead, filepath.Join(lt.ssh, "id_rsa")) {
		t.Errorf("--allow-read ~/.ssh/id_rsa: %v %q", err, p.Filesystem.AllowRead)
	}
	// A mask that is itself a link: its literal and resolved spellings
	// both re-open it.
	lt2 := newLinkTree(t)
	real := filepath.Join(t.TempDir(), "aws")
	writeTestFile(t, filepath.Join(real, "credentials"))
	symlink(t, real, filepath.Join(lt2.home, ".aws"))
	for _, a := range []string{"~/.aws", real} {
		in = lt2.in
		in.AllowRead = []string{a}
		if p, err = Build(in); err != nil || slices.Contains(p.Filesystem.DenyRead, real) {
			t.Errorf("--allow-read %s did not re-open the linked mask: %v %q", a, err, p.Filesystem.DenyRead)
		}
	}
}
