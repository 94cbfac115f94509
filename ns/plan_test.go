package ns

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/policy"
)

// opsOf lists a plan's ops as "kind path" lines, without the protected
// names (tested elsewhere).
func opsOf(plan MountPlan) []string {
	var out []string
	for _, o := range plan.Ops {
		if !o.Protected && o.Kind != OpPin && o.Kind != OpLink {
			out = append(out, o.Kind+" "+o.Path)
		}
	}
	return out
}

func TestPlanEmptyRoot(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"etc/shadow", "in/a", "secret/k", "proj/src/x", "proj/secret/y", "proj/secret/pub/z"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(p string) string { return filepath.Join(d, p) }
	cases := []struct {
		name               string
		deny, allow, write []string
		cwd                string
		want               []string
		emptyRoot          bool
	}{
		{
			name: "deny / with carve-outs: masks only where visible, the cwd made empty",
			deny: []string{"/", j("etc/shadow"), j("secret")}, allow: []string{j("etc"), j("in")}, cwd: j("proj"),
			want:      []string{"ro " + j("etc"), "ro " + j("in"), "dir " + j("proj"), "mask " + j("etc/shadow")},
			emptyRoot: true,
		},
		{
			name: "an allowRead inside another one is not bound twice",
			deny: []string{"/"}, allow: []string{j("proj"), j("proj/src"), j("proj/secret/pub")}, cwd: j("proj"),
			want:      []string{"ro " + j("proj")},
			emptyRoot: true,
		},
		{
			name: "a deny between two allows keeps both binds and the mask",
			deny: []string{"/", j("proj/secret")}, allow: []string{j("proj"), j("proj/secret/pub")}, cwd: j("proj"),
			want:      []string{"ro " + j("proj"), "mask " + j("proj/secret"), "ro " + j("proj/secret/pub")},
			emptyRoot: true,
		},
		{
			name: "a writable path is visible and the cwd inside it needs no dir op",
			deny: []string{"/"}, write: []string{j("proj")}, cwd: j("proj/src"),
			want:      []string{"rw " + j("proj")},
			emptyRoot: true,
		},
		{
			name: "without deny /: a mask inside a mask is not planned",
			deny: []string{j("proj/secret"), j("proj/secret/pub")}, cwd: j("proj"),
			want: []string{"ro " + j("proj"), "mask " + j("proj/secret")},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &policy.Policy{}
			p.Filesystem = policy.Filesystem{DenyRead: c.deny, AllowRead: c.allow, AllowWrite: c.write, SearchDepth: 1}
			p.Process.Dir = c.cwd
			p.Process.Argv = []string{"true"}
			plan, err := PlanMounts(p, c.write)
			if err != nil {
				t.Fatal(err)
			}
			if plan.EmptyRoot != c.emptyRoot {
				t.Fatalf("EmptyRoot = %v", plan.EmptyRoot)
			}
			if got := opsOf(plan); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ops:\n got %q\nwant %q", got, c.want)
			}
			vis := plan.Visible()
			if c.emptyRoot != (vis != nil) {
				t.Fatalf("Visible() = %q", vis)
			}
			for _, v := range vis {
				if strings.Contains(v, "secret/k") || strings.Contains(v, "proj/secret/y") {
					t.Fatalf("Visible lists a hidden path: %q", vis)
				}
			}
		})
	}
}

func TestRootLinks(t *testing.T) {
	entries, err := os.ReadDir("/")
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			links = append(links, "/"+e.Name())
		}
	}
	if len(links) == 0 {
		t.Skip("no top-level symlinks on this host (not merged /usr)")
	}
	// Nothing visible: no link. Everything visible: every link whose
	// target resolves.
	if ops := rootLinks(nil); len(ops) != 0 {
		t.Fatalf("links with nothing visible: %v", ops)
	}
	ops := rootLinks([]string{"/"})
	for _, o := range ops {
		target, _ := os.Readlink(o.Path)
		if o.Kind != OpLink || o.Target != target {
			t.Fatalf("bad link op %+v", o)
		}
	}
	if len(ops) == 0 {
		t.Fatalf("no link ops for %v", links)
	}
}

// TestHostInode: which view paths name the host's own inodes (Landlock
// rules the raw start's early process may open on the host).
func TestHostInode(t *testing.T) {
	mp := MountPlan{Ops: []Op{
		{Kind: OpRW, Path: "/w"},
		{Kind: OpStub, Path: "/w/.bashrc"},
		{Kind: OpRO, Path: "/tmp/proj"},
		{Kind: OpMask, Path: "/home/u/.ssh", Dir: true},
		{Kind: OpRO, Path: "/home/u/.ssh/known_hosts"},
		{Kind: OpOverlay, Path: "/d"},
		{Kind: OpRO, Path: "/d/keep", InOverlay: true},
		{Kind: OpContent, Path: "/etc/resolv.conf"},
	}}
	for p, want := range map[string]bool{
		"/":                        true,
		"/etc/passwd":              true,
		"/etc/resolv.conf":         false, // a file bound from elsewhere
		"/proc/1/status":           false,
		"/dev/null":                false,
		"/tmp":                     false,
		"/tmp/x":                   false,
		"/tmp/proj/src":            true, // bound into the private /tmp
		"/w/src":                   true,
		"/w/.bashrc":               false, // a stub
		"/home/u/.ssh/id_rsa":      false, // under a mask
		"/home/u/.ssh/known_hosts": true,  // re-allowed under it
		"/d/x":                     false, // a discard overlay
		"/d/keep":                  false,
		"/wx":                      true, // not under /w
	} {
		if got := mp.HostInode(p); got != want {
			t.Errorf("HostInode(%s) = %v, want %v", p, got, want)
		}
	}
	empty := mp
	empty.EmptyRoot = true
	if empty.HostInode("/etc/passwd") || !empty.HostInode("/w/src") {
		t.Error("EmptyRoot: only what the ops bind is the host's")
	}
}
