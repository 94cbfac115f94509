//go:build linux

// Command compare times sbx side by side with bare execution, bubblewrap
// and srt (each only when installed), interleaving the runs so that load
// on a shared machine hits all of them alike, and prints a Markdown table
// of medians, p90s and ratios plus sbx's peak RSS. Each round runs the
// tools in another order, so no row always runs right after the same
// other one (srt leaves work behind it: the run after it was measured up
// to 1.5 ms slower).
//
//	go run ./bench/compare -sbx bin/sbx -n 40
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-sh/sbx/bench"
)

type tool struct {
	name string
	dir  string
	argv []string
	env  []string // added to the environment
	peer bool     // not sbx: a failure in the rounds drops the row
	ms   []float64
	rss  int64 // launcher's peak RSS, KiB (VmHWM)
}

func main() {
	sbx := flag.String("sbx", "bin/sbx", "sbx binary")
	n := flag.Int("n", 30, "rounds")
	srt := flag.String("srt", "/opt/sbx-peers/srt/node_modules/.bin/srt", "srt launcher")
	only := flag.String("rows", "", "only rows whose name matches this regexp (the \"sbx -- /bin/true\" row, the ratios' base, is always kept)")
	alt := flag.String("alt", "", "a second sbx binary: every sbx row is also run with it, named \"… [alt]\", in the same rounds (before/after a change)")
	flag.Parse()
	want := func(name string) bool {
		return *only == "" || name == "sbx -- /bin/true" || regexp.MustCompile(*only).MatchString(name)
	}
	abs, err := filepath.Abs(*sbx)
	check(err)
	work, err := os.MkdirTemp("", "sbx-bench-")
	check(err)
	defer os.RemoveAll(work)
	fx := makeFixtures(work, want)
	tools := slices.DeleteFunc(rows(abs, *srt, fx), func(t *tool) bool { return !want(t.name) })
	if *alt != "" {
		altAbs, err := filepath.Abs(*alt)
		check(err)
		tools = withAlt(tools, abs, altAbs)
	}
	measure(tools, *n)
	report(tools)
	concurrent(abs, fx.empty)
}

// fixtures are the directories and files the rows run in and with.
type fixtures struct {
	work, empty, wempty, tree string
	settings                  string // 500 denyRead entries
}

func makeFixtures(work string, want func(string) bool) fixtures {
	empty := filepath.Join(work, "empty")
	wempty := filepath.Join(work, "wempty")
	tree := filepath.Join(work, "tree")
	check(os.MkdirAll(empty, 0o755))
	check(os.MkdirAll(wempty, 0o755))
	if want("sbx, writable 100k-file tree") || want("sbx, writable 100k-file tree, no scan cache") {
		check(bench.MakeTree(tree, 100_000))
	}
	// The 100k new files are dirty in the page cache: flushed now, not
	// by writeback in the middle of the rounds.
	syscall.Sync()
	// sbx's scan cache remembers only directories whose ctime is 2 s old
	// (ns.cacheMargin): a tree made just now would be read in full on
	// the first rounds. The "no scan cache" row never uses one.
	time.Sleep(2100 * time.Millisecond)
	// 500 policy entries: denyRead paths that exist.
	var deny []string
	for i := 0; i < 500; i++ {
		p := filepath.Join(work, "many", fmt.Sprintf("f%03d", i))
		check(os.MkdirAll(filepath.Dir(p), 0o755))
		check(os.WriteFile(p, nil, 0o644))
		deny = append(deny, p)
	}
	settings := filepath.Join(work, "many.json")
	b, _ := json.Marshal(map[string]any{"network": map[string]any{}, "filesystem": map[string]any{"denyRead": deny}})
	check(os.WriteFile(settings, b, 0o644))

	return fixtures{work: work, empty: empty, wempty: wempty, tree: tree, settings: settings}
}

// rows are the commands measured: the bare command, sbx's rows and the
// peers that are installed.
func rows(abs, srt string, fx fixtures) []*tool {
	work, empty, wempty, tree, settings := fx.work, fx.empty, fx.wempty, fx.tree, fx.settings
	tools := []*tool{
		{name: "bare /bin/true", dir: empty, argv: []string{"/bin/true"}},
		{name: "sbx -- /bin/true", dir: empty, argv: []string{abs, "--", "/bin/true"}},
	}
	if p, err := exec.LookPath("bwrap"); err == nil {
		tools = append(tools, &tool{name: "bwrap (unshare-all, ro /)", dir: empty, peer: true, argv: []string{p, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--new-session", "--die-with-parent", "/bin/true"}})
	}
	if _, err := os.Stat(srt); err == nil {
		srtSettings := filepath.Join(work, "srt.json")
		sb, _ := json.Marshal(map[string]any{
			"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
			"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
		})
		check(os.WriteFile(srtSettings, sb, 0o644))
		// srt leaves its socket (TMPDIR/srt-mux-PID-0.sock) behind; with
		// the shared /tmp, a later run that gets the same pid, as
		// another user, fails with EADDRINUSE. Its own TMPDIR here is
		// removed with the work directory.
		srtTmp := filepath.Join(work, "srt-tmp")
		check(os.MkdirAll(srtTmp, 0o700))
		tools = append(tools, &tool{name: "srt /bin/true", dir: empty, argv: []string{srt, "--settings", srtSettings, "/bin/true"},
			env: []string{"TMPDIR=" + srtTmp}, peer: true})
	}
	tools = append(tools,
		// A writable root costs its stubs and protections whatever its
		// size; this row is the tree's baseline.
		&tool{name: "sbx, writable empty dir", dir: wempty, argv: []string{abs, "--allow-write", ".", "--", "/bin/true"}},
		&tool{name: "sbx, writable 100k-file tree", dir: tree, argv: []string{abs, "--allow-write", ".", "--", "/bin/true"}},
		// XDG_CACHE_HOME that does not exist: sbx keeps no scan cache.
		&tool{name: "sbx, writable 100k-file tree, no scan cache", dir: tree, argv: []string{abs, "--allow-write", ".", "--", "/bin/true"},
			env: []string{"XDG_CACHE_HOME=" + filepath.Join(work, "no-cache")}},
		&tool{name: "sbx, 500 denyRead entries", dir: empty, argv: []string{abs, "--settings", settings, "--", "/bin/true"}},
		// The proxy on (listeners in the sandbox, the supervisor's
		// proxy started); /bin/true sends nothing.
		// In filtered mode the sandbox also gets the capture's TUN device
		// and the supervisor its gVisor stack; the second row
		// is the same without them.
		&tool{name: "sbx --allow-domain (proxy on)", dir: empty, argv: []string{abs, "--allow-domain", "localhost", "--", "/bin/true"}},
		&tool{name: "sbx --allow-domain --capture off", dir: empty, argv: []string{abs, "--allow-domain", "localhost", "--capture", "off", "--", "/bin/true"}},
		// Limits (docs/limits.md): where a cgroup is used, its cost
		// (made, joined, removed) shows against the default row.
		&tool{name: "sbx --pids 1000", dir: empty, argv: []string{abs, "--pids", "1000", "--", "/bin/true"}},
		&tool{name: "sbx --memory 1G", dir: empty, argv: []string{abs, "--memory", "1G", "--", "/bin/true"}},
	)
	return tools
}

// withAlt adds, for every sbx row, the same row run with the binary alt.
func withAlt(tools []*tool, abs, alt string) []*tool {
	for _, t := range slices.Clone(tools) {
		if t.argv[0] == abs {
			c := *t
			c.name += " [alt]"
			c.argv = append([]string{alt}, t.argv[1:]...)
			c.peer = true // an older binary may not know a row's flags
			tools = append(tools, &c)
		}
	}
	return tools
}

// measure runs every row once to warm up (dropping a peer that does not
// work here), then n rounds, each in its own order.
func measure(tools []*tool, n int) {
	for _, t := range tools { // warm up, and drop a peer that does not work here
		if err := runOnce(t); err != nil {
			fmt.Fprintf(os.Stderr, "skipping %s: %v\n", t.name, err)
			t.argv = nil
		}
		t.ms = nil
	}
	// Each round in its own order (a fixed seed: the same orders every
	// run), so that no row always runs right after the same other one.
	order := rand.New(rand.NewPCG(1, 2))
	round := slices.Clone(tools)
	for i := 0; i < n; i++ {
		order.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
		for _, t := range round {
			if t.argv == nil {
				continue
			}
			if err := runOnce(t); err != nil {
				if !t.peer {
					check(err)
				}
				fmt.Fprintf(os.Stderr, "dropping %s after a failure in round %d: %v\n", t.name, i+1, err)
				t.argv = nil
			}
		}
	}
}

// report prints the table: medians, p90, the ratios to the empty sbx row
// and to bwrap, and each launcher's peak RSS.
func report(tools []*tool) {
	var base float64
	for _, t := range tools {
		if t.name == "sbx -- /bin/true" {
			base = bench.Median(t.ms)
		}
	}
	var bw float64
	for _, t := range tools {
		if strings.HasPrefix(t.name, "bwrap") && t.argv != nil {
			bw = bench.Median(t.ms)
		}
	}
	// Peak RSS in a separate pass, so polling does not disturb timing.
	for _, t := range tools {
		if t.argv != nil {
			for i := 0; i < 5; i++ {
				if kb := peakRSS(t); kb > t.rss {
					t.rss = kb
				}
			}
		}
	}
	fmt.Printf("| command | median ms | p90 ms | × sbx empty | × bwrap | launcher peak RSS KiB |\n|---|---|---|---|---|---|\n")
	for _, t := range tools {
		if t.argv == nil {
			continue
		}
		m := bench.Median(t.ms)
		rb := "–"
		if bw > 0 {
			rb = fmt.Sprintf("%.2f", m/bw)
		}
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %s | %d |\n", t.name, m, bench.Pct(t.ms, 90), m/base, rb, t.rss)
	}
}

// concurrent runs 20 sandboxes at once: each must succeed and see only
// its own /tmp.
func concurrent(abs, empty string) {
	var wg sync.WaitGroup
	fails := 0
	var mu sync.Mutex
	start := time.Now()
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(abs, "--", "/bin/sh", "-c", fmt.Sprintf("echo %d > /tmp/x; sleep 0.1; cat /tmp/x", i))
			cmd.Dir = empty
			out, err := cmd.Output()
			if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(i) {
				mu.Lock()
				fails++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	fmt.Printf("\n20 concurrent sandboxes: %d failed, %.0f ms wall\n", fails, float64(time.Since(start).Microseconds())/1000)
}

func runOnce(t *tool) error {
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Dir = t.dir
	if t.env != nil {
		cmd.Env = append(os.Environ(), t.env...)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	t.ms = append(t.ms, float64(d.Microseconds())/1000)
	return nil
}

// peakRSS runs t once and returns the launcher process's own peak RSS
// (VmHWM of its address space, polled until it exits). wait4's maxrss
// would not do: it carries the forking benchmark's memory across exec.
func peakRSS(t *tool) int64 {
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Dir = t.dir
	if t.env != nil {
		cmd.Env = append(os.Environ(), t.env...)
	}
	if cmd.Start() != nil {
		return 0
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var peak int64
	for {
		select {
		case <-done:
			return peak
		default:
		}
		if kb := bench.VmHWM(cmd.Process.Pid); kb > peak {
			peak = kb
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
