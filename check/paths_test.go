package check

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// pathsOnly checks with only the paths rule on, so that commands the
// other rules would refuse still exercise it.
func pathsOnly(t *testing.T) Config {
	t.Helper()
	c, err := ParseConfig([]byte(`{"rules": {"length": false, "charset": false, "metachars": false,
		"structure": false, "prefix": false, "deniedWords": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPaths(t *testing.T) {
	root, outside := newRoot(t)
	if err := os.Symlink("/nonexistent-sbx-target", filepath.Join(root, "dangle")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SBX_TEST_OUT", outside)
	t.Setenv("SBX_TEST_IN", filepath.Join(root, "src"))
	t.Setenv("HOME", outside)
	cfg := pathsOnly(t)
	tests := []struct {
		cmd     string
		refused bool
	}{
		{"cat link/secret", true},              // relative path through a symlink pointing outside
		{"cat 'link/secret'", true},            // quoted, but it exists
		{"cat link", true},                     // a simple name that exists and escapes
		{"cat ./link", true},                   //
		{"cat " + root + "/link/secret", true}, // absolute, inside by spelling only
		{"cat api/Program.cs", false},          // symlink that stays inside
		{"cat " + root + "/src/Api", false},
		{"cat dangle/new", true}, // dangling link to outside
		{"cat dangle", true},
		{"cat 'link/../outside/secret'", true}, // ".." after a symlink, as the kernel sees it
		{"cat '/nonexistent/x'", false},        // quoted and missing: not a path
		{`grep "// @ts-ignore" src`, false},
		{"cat '/etc/passwd'", true},
		{"cat /etc/passwd", true},
		{"cat $SBX_TEST_OUT/secret", true},
		{`cat "$SBX_TEST_OUT"`, true},
		{"cat ${SBX_TEST_IN}/x", false},
		{"cat $SBX_TEST_UNSET/etc/passwd", true}, // unset expands to empty
		{"cat ~/secret", true},
		{"cat ~", true},
		{"cat ~root/x", true},
		{"cat '~/x'", false}, // quoted: no tilde expansion, and no such file
		{"cat x > /tmp/out", true},
		{"cat x > /dev/null 2> /dev/stderr", false},
		{"cat <<EOF\n/etc/passwd\nEOF", false}, // a here-document body is not a path
		{"X=/etc/passwd run", true},
		{"run --config=/etc/x", true},
		{"run -C /etc", true},
		{"run --watch -v", false},
		{"run KEY=value", false},
		{"run KEY=../x", true},
		{"run http://localhost:8080/a", false},
		{"run ..", true},
		{"run a/../b", true},
		{"run $(cat /etc/passwd)", true}, // words inside substitutions count
		{"run /etc/passwd \"", true},     // does not parse: blank-separated fields
		{"run C:\\\\Windows", true},
		{"run 'C:\\Windows'", false},
		{"run .", false},
		{"run ./", false},
		{"run " + root, false},
	}
	for _, tc := range tests {
		got := cfg.Check(root, tc.cmd)
		if refused := len(got) > 0; refused != tc.refused {
			t.Errorf("Check(%q): refused=%v, want %v; findings:\n%s", tc.cmd, refused, tc.refused, findingLines(got))
		}
		for _, f := range got {
			if f.Rule != RulePaths {
				t.Errorf("Check(%q): unexpected rule %q", tc.cmd, f.Rule)
			}
		}
	}
}

func TestPathsRootIsSymlink(t *testing.T) {
	root, _ := newRoot(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	cfg := pathsOnly(t)
	for _, cmd := range []string{"cat " + root + "/src", "cat " + alias + "/src", "cat src"} {
		if got := cfg.Check(alias, cmd); len(got) > 0 {
			t.Errorf("Check(alias, %q): %v", cmd, got)
		}
	}
	if got := cfg.Check(alias, "cat "+alias+"/link/secret"); len(got) == 0 {
		t.Errorf("escape through the aliased root was not refused")
	}
}

func TestPathsDefaultRootIsWorkingDirectory(t *testing.T) {
	root, _ := newRoot(t)
	t.Chdir(root)
	cfg := pathsOnly(t)
	if got := cfg.Check("", "cat src/Api"); len(got) > 0 {
		t.Errorf("inside the working directory refused: %v", got)
	}
	if got := cfg.Check("", "cat link/secret"); len(got) == 0 {
		t.Errorf("escape from the working directory not refused")
	}
}

func TestPathsSymlinkLoop(t *testing.T) {
	root, _ := newRoot(t)
	if err := os.Symlink("loop", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	got := pathsOnly(t).Check(root, "cat loop/x")
	if len(got) != 1 || got[0].Rule != RulePaths {
		t.Errorf("symlink loop: %v", got)
	}
}

func TestResolvePath(t *testing.T) {
	root, outside := newRoot(t)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	realOutside, err := filepath.EvalSymlinks(outside)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		root + "/link/secret":      realOutside + "/secret",
		root + "/api/x":            realRoot + "/src/Api/x",
		root + "/link/../proj/src": realRoot + "/src",
		root + "/missing/../src":   realRoot + "/src",
		root + "//./src/":          realRoot + "/src",
		"/":                        "/",
	}
	for in, want := range tests {
		got, err := resolvePath(in)
		if err != nil || got != want {
			t.Errorf("resolvePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCheckCwd(t *testing.T) {
	root, outside := newRoot(t)
	if err := os.Symlink("/nonexistent-sbx-target", filepath.Join(root, "dangle")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cwd     string
		refused bool
	}{
		{"", false},
		{".", false},
		{"src", false},
		{"src/Api", false},
		{"api", false},
		{"new/dir", false},
		{root, false},
		{root + "/src", false},
		{"link", true},
		{"link/x", true},
		{"dangle", true},
		{"../x", true},
		{"src/../..", true},
		{"~", true},
		{"~/x", true},
		{"$HOME", true},
		{outside, true},
		{"/", true},
		{"a\x00b", true},
	}
	for _, tc := range tests {
		got := CheckCwd(root, tc.cwd)
		if refused := len(got) > 0; refused != tc.refused {
			t.Errorf("CheckCwd(%q): %v, want refused=%v", tc.cwd, got, tc.refused)
		}
		for _, f := range got {
			if f.Rule != RuleCwd || f.Pos != -1 {
				t.Errorf("CheckCwd(%q): finding %+v, want rule cwd at -1", tc.cwd, f)
			}
		}
	}
}

func TestCheckEnv(t *testing.T) {
	ok := map[string]string{"PORT": "3000", "NODE_ENV": "production", "_X": "", "API_URL": "${HOME}/x"}
	if got := CheckEnv(ok); len(got) > 0 {
		t.Errorf("CheckEnv(%v) = %v", ok, got)
	}
	if got := CheckEnv(nil); len(got) > 0 {
		t.Errorf("CheckEnv(nil) = %v", got)
	}
	bad := map[string]string{
		"PATH": "/tmp", "path": "x", "PathExt": ".X", "NODE_OPTIONS": "--require x",
		"LD_PRELOAD": "x.so", "ld_library_path": "/x", "DYLD_INSERT_LIBRARIES": "x",
		"dyld_framework_path": "x", "1X": "y", "A-B": "c", "": "d", "A=B": "e", "OK": "a\x00b",
	}
	got := CheckEnv(bad)
	var keys []string
	for _, f := range got {
		if f.Rule != RuleEnv || f.Pos != -1 {
			t.Errorf("finding %+v: want rule env at -1", f)
		}
		keys = append(keys, f.Token)
	}
	if len(got) != len(bad) {
		t.Errorf("CheckEnv: %d findings for %d bad keys: %v", len(got), len(bad), got)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("findings not sorted by key: %v", keys)
	}
}
