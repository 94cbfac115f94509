//go:build linux

// Command reportcost measures what violation reporting costs on
// file-heavy work that stays inside its policy: sbx with --violations,
// and with --observe-files writes and all, against sbx without,
// interleaved round by round, medians.
//
//	CGO_ENABLED=0 go build -o bin/sbx ./cmd/sbx && go run ./bench/reportcost -sbx bin/sbx -n 7
//
// Workloads: extracting a 50k-file tar into a writable directory and
// reading every file back; building and testing a small Go module. The
// --undeclared-writes discard variant drops the --allow-write flags and
// the extraction's final rm: every write lands in a discard overlay, stays
// there, and is reported at exit.
//
// Then start-up: sbx -- /bin/true with no, one and three discard regions.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sh/sbx/bench"
)

func main() {
	sbx := flag.String("sbx", "bin/sbx", "sbx binary")
	n := flag.Int("n", 7, "rounds")
	flag.Parse()
	abs, err := filepath.Abs(*sbx)
	check(err)
	work, err := os.MkdirTemp("/var/tmp", "sbx-reportcost-")
	check(err)
	defer os.RemoveAll(work)

	src := filepath.Join(work, "src")
	check(bench.MakeTree(src, 50_000))
	tarball := filepath.Join(work, "tree.tar")
	run(exec.Command("tar", "cf", tarball, "-C", src, "."))
	check(os.RemoveAll(src))

	mod := filepath.Join(work, "mod")
	check(os.MkdirAll(mod, 0o755))
	write := func(name, s string) { check(os.WriteFile(filepath.Join(mod, name), []byte(s), 0o644)) }
	write("go.mod", "module example.com/m\n\ngo 1.21\n")
	write("main.go", "package main\n\nimport (\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"net/http\"\n)\n\nfunc main() { b, _ := json.Marshal(http.StatusOK); fmt.Println(string(b)) }\n")
	write("main_test.go", "package main\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n")
	goBin, err := exec.LookPath("go")
	check(err)
	cache := filepath.Join(work, "gocache")
	check(os.MkdirAll(cache, 0o755))
	goEnv := append(os.Environ(), "GOCACHE="+cache, "GOTELEMETRY=off", "GOFLAGS=-buildvcs=false", "XDG_CONFIG_HOME="+filepath.Join(mod, ".config"))

	out := filepath.Join(work, "out")
	check(os.MkdirAll(out, 0o755))
	type workload struct {
		name string
		dir  string
		env  []string
		args []string
	}
	loads := []workload{
		{"extract + read 50k files", out, nil, []string{"--allow-write", out, "--", "/bin/sh", "-c",
			"rm -rf x && mkdir x && tar xf " + tarball + " -C x && find x -type f -exec cat {} + > /dev/null && rm -rf x"}},
		{"go build + test (warm cache)", mod, goEnv, []string{"--allow-write", mod, "--allow-write", cache, "--", "/bin/sh", "-c",
			goBin + " build -o app . && " + goBin + " test -count=1 . > /dev/null"}},
	}
	vf := filepath.Join(work, "v.jsonl")
	vfD := filepath.Join(work, "discarded.jsonl") // the discard variant's records, counted per run
	variants := []struct {
		name    string
		flags   []string
		discard bool // no allowWrite: every write lands in a discard overlay and is reported
	}{
		{"sbx", nil, false},
		{"--violations", []string{"--violations", vf}, false},
		{"--observe-files writes", []string{"--violations", vf, "--observe-files", "writes"}, false},
		{"--observe-files all", []string{"--violations", vf, "--observe-files", "all"}, false},
		{"--undeclared-writes discard", []string{"--violations", vfD, "--undeclared-writes", "discard"}, true},
	}
	fmt.Printf("| workload |")
	for _, v := range variants {
		fmt.Printf(" %s median s |", v.name)
	}
	fmt.Printf(" discard records per run |\n|---|")
	for range variants {
		fmt.Printf("---|")
	}
	fmt.Printf("---|\n")
	for _, w := range loads {
		times := make([][]float64, len(variants))
		for i := 0; i <= *n; i++ { // round 0 warms up
			for j, v := range variants {
				args := w.args
				if v.discard {
					// No allowWrite, and the tree is kept: each run's
					// writes stay in its overlay, to be reported.
					args = withoutAllowWrite(args)
					last := len(args) - 1
					args = append(append([]string{}, args[:last]...), strings.TrimSuffix(args[last], " && rm -rf x"))
				}
				cmd := exec.Command(abs, append(append([]string{}, v.flags...), args...)...)
				cmd.Dir, cmd.Env = w.dir, w.env
				start := time.Now()
				o, err := cmd.CombinedOutput()
				d := time.Since(start).Seconds()
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", w.name, v.name, err, o)
					os.Exit(1)
				}
				if i > 0 {
					times[j] = append(times[j], d)
				}
			}
		}
		b, _ := os.ReadFile(vfD)
		recs := strings.Count(string(b), "\n") / (*n + 1)
		base := bench.Median(times[0])
		fmt.Printf("| %s | %.3f |", w.name, base)
		for _, t := range times[1:] {
			m := bench.Median(t)
			fmt.Printf(" %.3f (%+.1f%%) |", m, (m/base-1)*100)
		}
		fmt.Printf(" %d |\n", recs)
		os.Remove(vf)
		os.Remove(vfD)
	}
	regions := []string{filepath.Join(work, "r1"), filepath.Join(work, "r2"), filepath.Join(work, "r3")}
	for _, r := range regions {
		check(os.MkdirAll(r, 0o755))
	}
	starts := [][]string{nil, {"--discard-writes", regions[0]}, {"--discard-writes", regions[0], "--discard-writes", regions[1], "--discard-writes", regions[2]}}
	names := []string{"no discard region", "one region", "three regions"}
	st := make([][]float64, len(starts))
	for i := 0; i <= 20*(*n); i++ {
		for j, f := range starts {
			cmd := exec.Command(abs, append(append([]string{}, f...), "--", "/bin/true")...)
			start := time.Now()
			check(cmd.Run())
			if i > 0 {
				st[j] = append(st[j], time.Since(start).Seconds()*1000)
			}
		}
	}
	fmt.Printf("\n| start-up, sbx -- /bin/true | median ms |\n|---|---|\n")
	for j := range starts {
		fmt.Printf("| %s | %.2f (%+.1f%%) |\n", names[j], bench.Median(st[j]), (bench.Median(st[j])/bench.Median(st[0])-1)*100)
	}
}

// withoutAllowWrite drops the --allow-write pairs before "--".
func withoutAllowWrite(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if args[i] == "--allow-write" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

func run(cmd *exec.Cmd) {
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%v: %v\n%s", cmd.Args, err, out)
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
