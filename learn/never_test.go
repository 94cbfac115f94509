package learn

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// TestNeverGranted: HOME, an ancestor of the working directory, a
// refusal and a protected name stay out even when every entry was
// touched; hosts come out sorted whatever order they were given in.
func TestNeverGranted(t *testing.T) {
	// The test's tree lies in /tmp, the view's own: not here.
	saved := viewOwn
	viewOwn = []string{"/proc", "/dev", "/sys"}
	defer func() { viewOwn = saved }()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, cwd := filepath.Join(root, "home"), filepath.Join(root, "work", "proj")
	tree(t, root, "home/a", "work/proj/f", "other/.envrc", "work/x", "other/secret")
	r, err := Build(Start{Policy: &policy.Policy{}, Argv: []string{"true"}, Cwd: cwd, Home: home}, Observed{
		Paths: map[string]Access{
			filepath.Join(home, "a"): Read, filepath.Join(cwd, "f"): Read, filepath.Join(root, "work/x"): Read,
			filepath.Join(root, "other/secret"): Read, filepath.Join(root, "other/.envrc"): Write,
		},
		Hosts:   []string{"z.test:443", "a.test:443"},
		Refused: []Refusal{{Kind: "file-read", What: filepath.Join(root, "other/secret"), Rule: "managed denyRead"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(home, "a"), cwd, filepath.Join(root, "work/x")}; !slices.Equal(r.AllowRead, want) {
		t.Errorf("allowRead %q, want %q", r.AllowRead, want)
	}
	if len(r.AllowWrite) != 0 {
		t.Errorf("allowWrite %q: a protected name granted", r.AllowWrite)
	}
	if !slices.Equal(r.AllowedDomains, []string{"a.test:443", "z.test:443"}) {
		t.Errorf("hosts %q not sorted", r.AllowedDomains)
	}
}
