//go:build linux

// Command learncompare times `sbx learn` against a plain sbx run of the
// same command: the runtime matrix's fixture projects (Node, Python, Go,
// Rust, Java; cmd/sbx/testdata/runtimes), each only when its runtime is
// installed, and `go test` on a package of this repository with a warm
// build cache. For each workload three rows run in interleaved rounds,
// each round in its own order: the plain run, the plain run with every
// file call observed (--observe-files all: the supervisor's seccomp
// round trips, without learn's discard overlays, proxy or policy), and
// sbx learn. It prints a Markdown table of wall-clock medians, p90s and
// CPU time (user+sys of sbx and everything it ran), and learn's ratio to
// the plain run, median of the per-round ratios, with their spread.
//
//	go run ./bench/learncompare -sbx bin/sbx -n 7
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/sbx-sh/sbx/bench"
)

// workload is one command and how to run it.
type workload struct {
	name  string
	dir   string
	argv  []string
	flags []string // sbx flags of every row
	env   []string
}

// row is one way of running a workload.
type row struct {
	w         *workload
	kind      string // "sbx", "observe", "learn"
	argv      []string
	wall, cpu []float64 // ms
}

func main() {
	sbx := flag.String("sbx", "bin/sbx", "sbx binary")
	n := flag.Int("n", 7, "rounds")
	repo := flag.String("repo", ".", "this repository (its fixtures and the go test package)")
	pkg := flag.String("pkg", "./violations", "the package of -repo that go test runs")
	only := flag.String("only", "", "only workloads whose name matches this regexp")
	flag.Parse()
	abs, err := filepath.Abs(*sbx)
	check(err)
	repoAbs, err := filepath.Abs(*repo)
	check(err)
	// A directory the sandbox sees as the host has it (not /tmp, which
	// is the sandbox's own).
	work, err := os.MkdirTemp("/var/tmp", "sbx-learnbench-")
	check(err)
	defer os.RemoveAll(work)
	ws := workloads(repoAbs, *pkg, work)
	ws = slices.DeleteFunc(ws, func(w *workload) bool {
		return *only != "" && !regexp.MustCompile(*only).MatchString(w.name)
	})
	var rows []*row
	out := filepath.Join(work, "learned.json")
	for _, w := range ws {
		plain := append(append(append([]string{abs}, w.flags...), "--"), w.argv...)
		obs := append(append(append([]string{abs, "--observe-files", "all"}, w.flags...), "--"), w.argv...)
		learn := append(append(append([]string{abs, "learn", "--output", out}, w.flags...), "--"), w.argv...)
		rows = append(rows, &row{w: w, kind: "sbx", argv: plain}, &row{w: w, kind: "observe", argv: obs}, &row{w: w, kind: "learn", argv: learn})
	}
	for _, r := range rows { // warm up; a failing workload is dropped whole
		if err := r.run(); err != nil {
			fmt.Fprintf(os.Stderr, "skipping %s: %s: %v\n", r.w.name, r.kind, err)
			for _, o := range rows {
				if o.w == r.w {
					o.argv = nil
				}
			}
		}
		r.wall, r.cpu = nil, nil
	}
	order := rand.New(rand.NewPCG(1, 2))
	round := slices.Clone(rows)
	for i := 0; i < *n; i++ {
		order.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
		for _, r := range round {
			if r.argv != nil {
				check(r.run())
			}
		}
	}
	report(rows)
}

// workloads are the runtime matrix's fixtures that can run here, and go
// test on pkg.
func workloads(repo, pkg, work string) []*workload {
	fixture := func(name string) string {
		dst := filepath.Join(work, name)
		src := filepath.Join(repo, "cmd", "sbx", "testdata", "runtimes", name)
		check(filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		}))
		return dst
	}
	mkdir := func(p string) string { check(os.MkdirAll(p, 0o755)); return p }
	var ws []*workload
	if npm, err := exec.LookPath("npm"); err == nil {
		ws = append(ws, &workload{name: "node: npm test", dir: fixture("node"), argv: []string{npm, "test"},
			flags: []string{"--preset", "node"}, env: []string{"HOME=" + mkdir(filepath.Join(work, "node-home"))}})
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		ws = append(ws, &workload{name: "python: unittest", dir: fixture("python"), argv: []string{"/usr/bin/python3", "-m", "unittest", "-q"},
			env: []string{"PYTHONDONTWRITEBYTECODE=1"}})
	}
	gobin, goErr := exec.LookPath("go")
	if goErr == nil {
		ws = append(ws, &workload{name: "go: go test (fixture)", dir: fixture("go"), argv: []string{gobin, "test", "-count=1", "./..."},
			flags: []string{"--preset", "go"}, env: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS="}})
	}
	if _, err := os.Stat("/usr/bin/cargo"); err == nil {
		dir := fixture("rust")
		target, home := mkdir(filepath.Join(dir, "target")), mkdir(filepath.Join(work, "cargo-home"))
		ws = append(ws, &workload{name: "rust: cargo test", dir: dir, argv: []string{"/usr/bin/cargo", "test", "--offline", "-q"},
			flags: []string{"--allow-write", target, "--allow-write", home}, env: []string{"CARGO_HOME=" + home, "CARGO_TERM_COLOR=never"}})
	}
	if jdk := "/usr/lib/jvm/java-17-openjdk-amd64/bin"; exists(jdk) {
		dir := fixture("java")
		out := mkdir(filepath.Join(dir, "out"))
		ws = append(ws, &workload{name: "java 17: javac + java", dir: dir,
			argv:  []string{"/bin/sh", "-c", `"$1" -d out Plant.java && "$2" -cp out Plant`, "sh", jdk + "/javac", jdk + "/java"},
			flags: []string{"--allow-write", out}})
	}
	if goErr == nil {
		ws = append(ws, &workload{name: "go test " + pkg + " (this repository)", dir: repo, argv: []string{gobin, "test", "-count=1", pkg},
			flags: []string{"--preset", "go"}, env: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS="}})
	}
	return ws
}

func (r *row) run() error {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Dir = r.w.dir
	cmd.Env = append(os.Environ(), r.w.env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	r.wall = append(r.wall, ms(d))
	r.cpu = append(r.cpu, ms(cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// report prints one line per workload: each row's wall median (p90) and
// CPU median, and learn's and the observer's ratios to the plain run,
// the median of the per-round ratios with their min and max.
func report(rows []*row) {
	fmt.Println("| workload | sbx ms (p90) | --observe-files all ms | sbx learn ms (p90) | learn ÷ sbx, wall (min–max) | learn ÷ sbx, CPU |")
	fmt.Println("|---|---:|---:|---:|---|---:|")
	for i := 0; i+2 < len(rows); i += 3 {
		p, o, l := rows[i], rows[i+1], rows[i+2]
		if p.argv == nil {
			continue
		}
		var ratio []float64
		for j := range min(len(p.wall), len(l.wall)) {
			ratio = append(ratio, l.wall[j]/p.wall[j])
		}
		fmt.Printf("| %s | %.0f (%.0f) | %.0f | %.0f (%.0f) | %.2f× (%.2f–%.2f) | %.2f× |\n", p.w.name,
			bench.Median(p.wall), bench.Pct(p.wall, 90), bench.Median(o.wall), bench.Median(l.wall), bench.Pct(l.wall, 90),
			bench.Median(ratio), slices.Min(ratio), slices.Max(ratio), bench.Median(l.cpu)/bench.Median(p.cpu))
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
