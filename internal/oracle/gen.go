package oracle

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// BaseTree is the tree every case starts from, relative to its root:
// a fake HOME with credentials, a working directory with nested
// directories, names with spaces, protected names at several depths,
// *.pem files for ** globs, a file named like a glob, and symlinks into
// and out of denied regions and masks.
var BaseTree = []Node{
	{Path: "home/.ssh/id_rsa", Kind: "file"},
	{Path: "home/.aws/credentials", Kind: "file"},
	{Path: "home/.config/gh/hosts.yml", Kind: "file"},
	{Path: "home/.config/autostart/x.desktop", Kind: "file"},
	{Path: "home/.bashrc", Kind: "file"},
	{Path: "home/notes.txt", Kind: "file"},
	{Path: "home/keys", Kind: "link", Target: ".ssh"},
	{Path: "work/README.md", Kind: "file"},
	{Path: "work/src/a.go", Kind: "file"},
	{Path: "work/src/sub/deep/x.txt", Kind: "file"},
	{Path: "work/my docs/read me.txt", Kind: "file"},
	{Path: "work/secret/key", Kind: "file"},
	{Path: "work/key.pem", Kind: "file"},
	{Path: "work/a/key.pem", Kind: "file"},
	{Path: "work/a/b/key.pem", Kind: "file"},
	{Path: "work/a/b/.bashrc", Kind: "file"},
	{Path: "work/a/b/c/.bashrc", Kind: "file"},
	{Path: "work/secrets[prod]", Kind: "file"},
	{Path: "work/.git/config", Kind: "file"},
	{Path: "work/.git/hooks/pre-commit", Kind: "file"},
	{Path: "work/.vscode/settings.json", Kind: "file"},
	{Path: "work/gen/g.txt", Kind: "file"},
	{Path: "work/lssh", Kind: "link", Target: "../home/.ssh"},
	{Path: "work/lout", Kind: "link", Target: "../outside"},
	{Path: "work/lsec", Kind: "link", Target: "secret"},
	{Path: "work/lauto", Kind: "link", Target: "../home/.config/autostart"},
	{Path: "work/src/lkey", Kind: "link", Target: "../../home/.ssh/id_rsa"},
	{Path: "outside/o.txt", Kind: "file"},
	{Path: "outside/dir/p.txt", Kind: "file"},
	{Path: "outside/lwork", Kind: "link", Target: "../work/secret"},
	{Path: "tool/gocache/c.txt", Kind: "file"},
	{Path: "tool/gomod/m.txt", Kind: "file"},
	{Path: "tool/gopath/pkg/sumdb/s.txt", Kind: "file"},
}

// createTargets are missing paths the probe tries to create (besides one
// new file in every directory).
var createTargets = []string{
	"work/.env", "work/.bashrc", "work/.profile", "work/.mcp.json", "work/a/config.json",
	"work/.git/hooks/post-checkout", "work/a/b/.bashrc2", "work/lout/new-via-link.txt",
	"work/lauto/evil.desktop", "work/lssh/authorized_keys", "home/.profile", "home/.ssh/new",
	"work/.vscode/tasks.json", "work/.idea", "work/my docs/new file.txt",
}

// Materialize writes the base tree, c's extra nodes and c's settings
// files below base, and returns where everything is.
func Materialize(c *Case, base string) (Env, error) {
	t := filepath.Join(base, "t")
	if err := os.MkdirAll(t, 0o755); err != nil {
		return Env{}, err
	}
	t, err := filepath.EvalSymlinks(t)
	if err != nil {
		return Env{}, err
	}
	for i, n := range append(append([]Node(nil), BaseTree...), c.Extra...) {
		extra := i >= len(BaseTree)
		p := filepath.Join(t, n.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			if extra {
				continue // an extra node that clashes with another: left out
			}
			return Env{}, err
		}
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		switch n.Kind {
		case "dir":
			err = os.Mkdir(p, 0o755)
		case "deep":
			err = makeDeep(p, n.Levels)
		case "file":
			err = os.WriteFile(p, []byte("content of "+n.Path+"\n"), 0o644)
		case "link":
			err = os.Symlink(strings.ReplaceAll(n.Target, "@T", t), p)
		}
		if err != nil && !extra {
			return Env{}, err
		}
	}
	// Modes last, deepest first: a closed directory's parent is still
	// open while it is closed.
	nodes := append(append([]Node(nil), BaseTree...), c.Extra...)
	sort.Slice(nodes, func(i, j int) bool { return len(nodes[i].Path) > len(nodes[j].Path) })
	for _, n := range nodes {
		if n.Kind == "dir" && n.Mode != "" {
			mode, err := strconv.ParseUint(n.Mode, 8, 32)
			if err != nil {
				return Env{}, fmt.Errorf("node %s: mode %q: %w", n.Path, n.Mode, err)
			}
			if err := os.Chmod(filepath.Join(t, n.Path), os.FileMode(mode)); err != nil {
				return Env{}, err
			}
		}
	}
	cwd := filepath.Join(t, "work")
	if c.Cwd != "" {
		cwd = filepath.Join(t, c.Cwd)
	}
	env := Env{T: t, Home: filepath.Join(t, "home"), Cwd: cwd, Dir: filepath.Join(t, "work"), Files: map[int]string{}}
	cfg := filepath.Join(base, "cfg")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		return Env{}, err
	}
	for i, l := range c.Layers {
		var file string
		switch l.Source {
		case SrcFlags:
			continue
		case SrcSrt, SrcClaude:
			file = filepath.Join(cfg, fmt.Sprintf("layer%d.json", i))
			if l.InTree {
				file = filepath.Join(cwd, fmt.Sprintf(".oracle-layer%d.json", i))
			}
		case SrcManaged:
			file = filepath.Join(cfg, fmt.Sprintf("managed%d.json", i))
		case SrcUser:
			file = filepath.Join(env.Home, ".claude", "settings.json")
		case SrcProject:
			file = filepath.Join(env.Dir, ".claude", "settings.json")
		case SrcLocal:
			file = filepath.Join(env.Dir, ".claude", "settings.local.json")
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return Env{}, err
		}
		if err := os.WriteFile(file, []byte(fileText(l, t)), 0o644); err != nil {
			return Env{}, err
		}
		env.Files[i] = file
	}
	return env, nil
}

// makeDeep makes the directory p and a chain of levels directories
// named DeepName below it, each opened relative to the one above
// (mkdirat, openat: no path is ever longer than one name), with a
// key.pem at the bottom.
func makeDeep(p string, levels int) error {
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	for i := 0; i < levels; i++ {
		if err := unix.Mkdirat(fd, DeepName, 0o755); err != nil {
			unix.Close(fd)
			return fmt.Errorf("mkdirat level %d: %w", i, err)
		}
		next, err := unix.Openat(fd, DeepName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("openat level %d: %w", i, err)
		}
		fd = next
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, "key.pem", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("openat key.pem: %w", err)
	}
	_, err = unix.Write(f, []byte("content of a deep key.pem\n"))
	unix.Close(f)
	return err
}

// Deepest is the deepest directory of the deep chain below p (absolute)
// that a mount can name (its path at most maxPlanPath bytes).
func Deepest(p string) string {
	for len(p)+1+len(DeepName) <= maxPlanPath {
		next := filepath.Join(p, DeepName)
		if _, err := os.Lstat(next); err != nil {
			break
		}
		p = next
	}
	return p
}

// fileText is a settings layer's file.
func fileText(l Layer, t string) string {
	if l.Raw != "" {
		return strings.ReplaceAll(l.Raw, "@T", t)
	}
	sub := func(ss []string) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, strings.ReplaceAll(s, "@T", t))
		}
		return out
	}
	fs := map[string]any{}
	put := func(k string, ss []string) {
		if len(ss) > 0 {
			fs[k] = sub(ss)
		}
	}
	put("allowRead", l.AllowRead)
	put("denyRead", l.DenyRead)
	put("allowWrite", l.AllowWrite)
	put("denyWrite", l.DenyWrite)
	if l.Disabled {
		fs["disabled"] = true
	}
	if l.ManagedReadOnly {
		fs["allowManagedReadPathsOnly"] = true
	}
	var top map[string]any
	if l.Source == SrcSrt {
		for _, k := range []string{"denyRead", "allowWrite", "denyWrite"} {
			if fs[k] == nil {
				fs[k] = []string{}
			}
		}
		top = map[string]any{"network": map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}}, "filesystem": fs}
		if l.IgnoreViolations {
			top["ignoreViolations"] = map[string][]string{"*": {"/"}}
		}
	} else {
		sb := map[string]any{}
		if len(fs) > 0 {
			sb["filesystem"] = fs
		}
		if l.IgnoreViolations {
			sb["ignoreViolations"] = map[string][]string{"*": {"/"}}
		}
		top = map[string]any{"sandbox": sb}
		perms := map[string]any{}
		var allow, deny []string
		for _, s := range sub(l.EditAllow) {
			allow = append(allow, "Edit("+s+")")
		}
		for _, s := range sub(l.ReadDeny) {
			deny = append(deny, "Read("+s+")")
		}
		for _, s := range sub(l.EditDeny) {
			deny = append(deny, "Edit("+s+")")
		}
		if len(allow) > 0 {
			perms["allow"] = allow
		}
		if len(deny) > 0 {
			perms["deny"] = deny
		}
		if len(l.AddDirs) > 0 {
			perms["additionalDirectories"] = sub(l.AddDirs)
		}
		if len(perms) > 0 {
			top["permissions"] = perms
		}
	}
	b, _ := json.MarshalIndent(top, "", "  ")
	return string(b) + "\n"
}

// Args is the sbx command line for c (without the command after --).
func Args(c *Case, env Env) []string {
	var args []string
	for i, l := range c.Layers {
		switch l.Source {
		case SrcFlags:
			if l.Raw != "" {
				args = append(args, strings.Fields(strings.ReplaceAll(l.Raw, "@T", env.T))...)
				continue
			}
			add := func(flag string, ss []string) {
				for _, s := range ss {
					args = append(args, flag, strings.ReplaceAll(s, "@T", env.T))
				}
			}
			add("--allow-read", l.AllowRead)
			add("--deny-read", l.DenyRead)
			add("--allow-write", l.AllowWrite)
			add("--deny-write", l.DenyWrite)
			add("--preset", l.Presets)
			if l.ReadsDeclared {
				args = append(args, "--reads", "declared")
			}
		case SrcSrt, SrcClaude:
			args = append(args, "--settings", env.Files[i])
		case SrcManaged:
			args = append(args, "--managed-settings", env.Files[i])
		}
	}
	if c.Claude {
		if env.Cwd == env.Dir || strings.HasPrefix(env.Cwd, env.Dir+"/") {
			// From the project's root or below it, --claude-settings
			// finds the project itself.
			args = append(args, "--claude-settings")
		} else {
			rel, _ := filepath.Rel(env.Cwd, env.Dir)
			args = append(args, "--claude-settings="+rel)
		}
	}
	return args
}

// Probes lists what to try in the tree: read and write every file (also
// through links), list every directory, create a new file in every
// directory and at each of createTargets.
//
// Directories left closed (mode 000, 0311) come first, each with a
// chmod to 0755: the next run's command restores what it can, then
// reads. A path "deepest:DIR" is the deepest directory of DIR's deep
// chain a mount can name. No path longer than a mount can name is
// probed.
func Probes(c *Case, env Env) []Probe {
	closed := ClosedDirs(env.T)
	reclose := OpenDirs(closed)
	defer reclose()
	var chmods []Probe
	for d := range closed {
		chmods = append(chmods, Probe{"chmod", d})
	}
	sort.Slice(chmods, func(i, j int) bool { return chmods[i].Path < chmods[j].Path })
	if len(c.Probes) > 0 {
		out := chmods
		for _, p := range c.Probes {
			abs := filepath.Join(env.T, p.Path)
			if rest, ok := strings.CutPrefix(p.Path, "deepest:"); ok {
				abs = Deepest(filepath.Join(env.T, rest))
			}
			out = append(out, Probe{Op: p.Op, Path: abs})
		}
		return out
	}
	var reads, lists, writes, creates []Probe
	seen := map[string]bool{}
	var nodes []string
	_ = filepath.Walk(env.T, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == env.T {
			return nil
		}
		if len(p) > maxPlanPath-300 {
			return filepath.SkipDir
		}
		nodes = append(nodes, p)
		return nil
	})
	sort.Strings(nodes)
	for _, p := range nodes {
		if seen[p] {
			continue
		}
		seen[p] = true
		st, err := os.Stat(p) // through links
		if err != nil {
			continue // a dangling link
		}
		if st.IsDir() {
			lists = append(lists, Probe{"list", p})
			name := "new-" + filepath.Base(p) + ".txt"
			if len(name) > 255 {
				name = "new-deep.txt" // in a deep chain
			}
			creates = append(creates, Probe{"create", filepath.Join(p, name)})
			continue
		}
		reads = append(reads, Probe{"read", p})
		writes = append(writes, Probe{"write", p})
	}
	for _, t := range createTargets {
		creates = append(creates, Probe{"create", filepath.Join(env.T, t)})
	}
	// A create probe must name a new path, distinct from every other.
	var cs []Probe
	made := map[string]bool{}
	for _, p := range creates {
		real, _ := resolve(p.Path)
		if exists(real) || made[real] {
			continue
		}
		made[real] = true
		cs = append(cs, p)
	}
	return append(chmods, append(append(append(reads, lists...), writes...), cs...)...)
}

// Generate draws a case from seed.
func Generate(seed int64) *Case {
	r := rand.New(rand.NewSource(seed))
	c := &Case{Seed: seed}
	pick := func(pool []string) string { return pool[r.Intn(len(pool))] }
	many := func(pool []string, max int) []string {
		var out []string
		for n := r.Intn(max + 1); n > 0; n-- {
			out = append(out, pick(pool))
		}
		return out
	}
	// Extra nodes: names with spaces, protected names deeper down, links.
	names := []string{"x", "with space", "deep", ".idea", ".bashrc", ".mcp.json", ".git", "data.pem", "ünï"}
	parents := []string{"work", "work/src", "work/a", "work/my docs", "work/gen", "work/src/sub", "outside", "home", "home/.config"}
	for n := r.Intn(5); n > 0; n-- {
		p := pick(parents) + "/" + pick(names)
		switch k := r.Intn(3); k {
		case 0:
			c.Extra = append(c.Extra, Node{Path: p + "/f.txt", Kind: "file"})
		case 1:
			c.Extra = append(c.Extra, Node{Path: p, Kind: "file"})
		default:
			targets := []string{"@T/home/.aws", "@T/work/secret", "@T/outside/dir", "@T/work/gen", "@T/home/.ssh/id_rsa", "@T/work/src"}
			c.Extra = append(c.Extra, Node{Path: p + "-link", Kind: "link", Target: pick(targets)})
		}
	}

	dirs := []string{".", "./src", "src", "./my docs", "./secret", "./a", "./a/b", "./gen", "~", "~/.config", "@T/outside", "./src/sub", "@T/tool"}
	files := []string{"./secret/key", "~/.ssh/id_rsa", "./src/a.go", "./key.pem", "~/.aws/credentials", "./my docs/read me.txt"}
	links := []string{"./lssh", "./lout", "./lsec", "./src/lkey", "./lauto", "~/keys", "@T/outside/lwork", "~/keys/id_rsa"}
	missing := []string{"./.env", "./gen/new.txt", "./a/config.json", "./a/new/deeper.txt"}
	globs := []string{"./**/*.pem", "./a/**", "./*.pem", "./secrets[prod]", "./s?c/**", "./[ab]/**", "./src/**/*.txt", "~/.ssh/*", "./**/key"}
	masks := []string{"~/.ssh", "~/.aws", "~/.ssh/id_rsa", "~/.config/gh"}
	mixed := func(wDirs, wFiles, wLinks, wMissing, wGlobs, wMasks int) []string {
		var pool []string
		for _, g := range []struct {
			w int
			p []string
		}{{wDirs, dirs}, {wFiles, files}, {wLinks, links}, {wMissing, missing}, {wGlobs, globs}, {wMasks, masks}} {
			for i := 0; i < g.w; i++ {
				pool = append(pool, g.p...)
			}
		}
		return pool
	}
	// Links that cross out of the working tree make a grant refused
	// (exit 125): a third of the cases use them in grants.
	if r.Intn(3) != 0 {
		links = []string{"./lsec", "~/keys", "~/keys/id_rsa"}
	}
	readPool := mixed(2, 2, 1, 1, 2, 2)
	denyPool := mixed(2, 2, 1, 1, 2, 0)
	writePool := append(mixed(6, 0, 1, 0, 1, 0), "./.git", "./nothere")
	rulePool := []string{"./secret/**", "secret/**", "*.pem", ".env", "./.env", "~/.aws/**", "./gen/**", "src/**", "./a/config.json",
		"./a/**", "./lssh/**", "//@T/outside/**", "key", "./**/*.pem", "./my docs/**", "/src/**"}

	fsLayer := func(src Source) Layer {
		l := Layer{Source: src}
		l.AllowRead = many(readPool, 2)
		l.DenyRead = many(denyPool, 2)
		l.AllowWrite = many(writePool, 2)
		l.DenyWrite = many(append(denyPool, missing...), 2)
		return l
	}
	ruleLayer := func(src Source) Layer {
		l := fsLayer(src)
		if r.Intn(2) == 0 {
			l.AllowRead, l.DenyRead, l.AllowWrite, l.DenyWrite = nil, many(denyPool, 1), many(writePool, 1), nil
		}
		l.ReadDeny = many(rulePool, 2)
		l.EditDeny = many(rulePool, 2)
		l.EditAllow = many(rulePool, 2)
		if r.Intn(4) == 0 {
			l.AddDirs = []string{pick([]string{"./gen", "./src", "@T/outside", "./a"})}
		}
		return l
	}
	if r.Intn(5) != 0 {
		l := fsLayer(SrcFlags)
		if r.Intn(8) == 0 {
			l.Presets = []string{"go"}
		}
		if r.Intn(10) == 0 {
			l.ReadsDeclared = true
		}
		c.Layers = append(c.Layers, l)
	}
	for n := r.Intn(3); n > 0; n-- {
		l := fsLayer(SrcSrt)
		l.InTree = r.Intn(4) == 0
		c.Layers = append(c.Layers, l)
	}
	if r.Intn(3) == 0 {
		l := ruleLayer(SrcClaude)
		l.InTree = r.Intn(4) == 0
		c.Layers = append(c.Layers, l)
	}
	if r.Intn(3) == 0 {
		c.Claude = true
		for _, s := range []Source{SrcUser, SrcProject, SrcLocal} {
			if r.Intn(2) == 0 {
				c.Layers = append(c.Layers, ruleLayer(s))
			}
		}
		switch r.Intn(4) {
		case 0:
			c.Cwd = "outside"
		case 1:
			c.Cwd = "work/src" // an agent's shell cds below the project's root
		}
	}
	if r.Intn(4) == 0 {
		l := Layer{Source: SrcManaged}
		l.DenyRead = []string{pick([]string{"@T/work/secret", "@T/tool", "@T/work/gen", "~/.config", "@T/work/a", "@T/outside"})}
		l.AllowRead = many([]string{"@T/work/secret/key", "~/.config/gh"}, 1)
		l.ManagedReadOnly = r.Intn(3) == 0
		c.Layers = append(c.Layers, l)
	}
	// Scalars that switch enforcement off or weaken it, now and then.
	if len(c.Layers) > 0 && r.Intn(10) == 0 {
		i := r.Intn(len(c.Layers))
		if c.Layers[i].Source != SrcFlags {
			if r.Intn(2) == 0 {
				c.Layers[i].Disabled = true
			} else {
				c.Layers[i].IgnoreViolations = true
			}
		}
	}
	// A malformed layer now and then.
	if r.Intn(12) == 0 {
		c.Layers = append(c.Layers, pickMalformed(r))
	}
	leftBehind(r, c)
	return c
}

// leftBehind adds, now and then, what an earlier run leaves in the
// tree (docs/settings.md "Paths and globs"): a directory made unreadable
// (mode 000, or 0311: enter but not list), inside and outside writable
// roots, left directly or by a previous run under the same policy
// (Case.Prep); a chain of directories longer than a mount can name; a
// key moved or a directory renamed by the previous run. Drawn after
// everything else, so the seeds' earlier draws stay as they were.
func leftBehind(r *rand.Rand, c *Case) {
	pick := func(pool []string) string { return pool[r.Intn(len(pool))] }
	var prep []string
	if r.Intn(4) == 0 {
		d := pick([]string{"work", "work/a", "work/src/sub/deep", "work/gen", "work/my docs", "outside", "home"}) + "/left"
		c.Extra = append(c.Extra, Node{Path: d + "/lk.pem", Kind: "file"}, Node{Path: d + "/n.txt", Kind: "file"})
		mode := "000"
		if r.Intn(6) == 0 {
			mode = "311"
		}
		if r.Intn(2) == 0 {
			c.Extra = append(c.Extra, Node{Path: d, Kind: "dir", Mode: mode})
		} else {
			prep = append(prep, "chmod "+mode+" '@T/"+d+"'")
		}
	}
	if r.Intn(8) == 0 {
		d := pick([]string{"work/gen", "work/a", "outside"}) + "/deep"
		c.Extra = append(c.Extra, Node{Path: d, Kind: "deep", Levels: 17 + r.Intn(2)})
	}
	if r.Intn(6) == 0 {
		prep = append(prep, pick([]string{
			"mv @T/work/a/b/key.pem @T/work/gen/k2.pem",
			"mv @T/work/src/sub @T/work/src/moved",
			"mkdir -p @T/work/gen/x && mv @T/work/key.pem @T/work/gen/x/ && chmod 000 @T/work/gen/x",
			"mv @T/work/secret @T/work/gen/secret2",
		}))
	}
	if len(prep) > 0 {
		c.Prep = strings.Join(prep, "; ")
	}
}

// malformed are layers sbx must refuse (exit 125, one line).
var malformed = []Layer{
	{Source: SrcSrt, Raw: `{`},
	{Source: SrcSrt, Raw: `{"filesystem": {"denyRead": []}}`},
	{Source: SrcSrt, Raw: `{"network": {}, "filesystem": {"denyReed": ["./secret"]}}`},
	{Source: SrcSrt, Raw: `{"network": {}, "filesystem": {"denyRead": "./secret"}}`},
	{Source: SrcSrt, Raw: `{"network": {}, "filesystem": {}, "permissions": {"deny": ["Read(./secret)"]}}`},
	{Source: SrcClaude, Raw: `{"permissions": {"deny": ["Read(./a[b)"]}}`},
	{Source: SrcClaude, Raw: `{"permissions": {"allow": ["Edit"]}}`},
	{Source: SrcClaude, Raw: `{"permissions": {"deny": ["Read(./secret"]}}`},
	{Source: SrcClaude, Raw: `{"sandbox": {"filesystem": {"allowWrite": ["./no/such/dir"]}}}`},
	{Source: SrcClaude, Raw: `{"sandbox": {"filesystem": {"allowWrite": ["./.git"]}}}`},
	{Source: SrcManaged, Raw: `{"sandbox": {"filesystem": {"denyRead": [1]}}}`},
	{Source: SrcFlags, Raw: `--deny-read ./a[b`},
	{Source: SrcFlags, Raw: `--deny-read ./*/../secret`},
	{Source: SrcFlags, Raw: `--allow-write ./no/where`},
	{Source: SrcFlags, Raw: `--reads some`},
	{Source: SrcSrt, Raw: `{"network": {}, "filesystem": {}} {}`},
}

func pickMalformed(r *rand.Rand) Layer { return malformed[r.Intn(len(malformed))] }

// GenerateSrt draws an srt-format case from seed: Generate's case with
// the lists of its flags and srt layers folded into one srt settings file
// (what srt reads: filesystem.allowRead, denyRead, allowWrite, denyWrite).
func GenerateSrt(seed int64) *Case {
	g := Generate(seed)
	l := Layer{Source: SrcSrt}
	for _, x := range g.Layers {
		if x.Raw != "" || (x.Source != SrcFlags && x.Source != SrcSrt) {
			continue
		}
		l.AllowRead = append(l.AllowRead, x.AllowRead...)
		l.DenyRead = append(l.DenyRead, x.DenyRead...)
		l.AllowWrite = append(l.AllowWrite, x.AllowWrite...)
		l.DenyWrite = append(l.DenyWrite, x.DenyWrite...)
	}
	return &Case{Seed: seed, Extra: g.Extra, Layers: []Layer{l}}
}
