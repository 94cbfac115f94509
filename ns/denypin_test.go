package ns

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDenyWriteOps: a missing denyWrite entry inside a writable root is
// stubbed at its first missing component (a directory when more follows),
// with the directories above it pinned; an existing one only gets its
// ancestors pinned; one outside every writable root, below a file, or
// inside a path bound read-only already (.git/hooks) gets nothing.
func TestDenyWriteOps(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"w/a/b/exists", "w/file", "other/x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(p string) string { return filepath.Join(d, p) }
	deny := []string{j("w/.env"), j("w/a/x/y/.env"), j("w/a/b/exists"), j("w/file/z"), j("other/missing"), j("w/.git/hooks/new")}
	var got []string
	for _, o := range denyWriteOps(deny, []string{j("w")}, []string{j("w/.git/hooks"), d}) {
		got = append(got, o.Kind+" "+strings.TrimPrefix(o.Path, d)+" dir="+map[bool]string{true: "y", false: "n"}[o.Dir])
	}
	want := []string{
		"stub /w/.env dir=n",
		"stub /w/a/x dir=y", "pin /w/a dir=y",
		"pin /w/a/b dir=y", "pin /w/a dir=y",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
