//go:build linux

package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// srtBin is where /work/shared/tools/install-peers puts srt.
const srtBin = "/opt/sbx-peers/srt/node_modules/.bin/srt"

// TestOracleSrtDiff runs srt-format cases under sbx and under srt with the
// same probe, and prints every difference, grouped by kind, with the
// model's side: where sbx agrees with the model, srt differs from sbx's
// documented semantics (deliberate, or an srt bug); where srt agrees with
// the model, sbx (or the model) is wrong. Slow (srt takes ~0.5 s a run):
// go test ./internal/oracle -run TestOracleSrtDiff -args -srt [-srt-seeds N].
func TestOracleSrtDiff(t *testing.T) {
	if !*srtDiff {
		t.Skip("give -srt")
	}
	if _, err := os.Stat(srtBin); err != nil {
		t.Skip("srt is not installed (run /work/shared/tools/install-peers)")
	}
	type group struct {
		n       int
		seeds   []int64
		example string
	}
	groups := map[string]*group{}
	var order []string
	add := func(k string, seed int64, ex string) {
		g, ok := groups[k]
		if !ok {
			g = &group{example: ex}
			groups[k] = g
			order = append(order, k)
		}
		g.n++
		if len(g.seeds) < 8 && (len(g.seeds) == 0 || g.seeds[len(g.seeds)-1] != seed) {
			g.seeds = append(g.seeds, seed)
		}
	}
	cases, same := 0, 0
	for seed := int64(1); seed <= int64(*srtSeeds); seed++ {
		c := GenerateSrt(seed)
		o := runCase(t, c) // sbx, and the model
		sr := runSrt(t, c)
		cases++
		pol, _ := json.Marshal(c.Layers[0])
		pols := strings.ReplaceAll(string(pol), `"source":"srt",`, "")
		switch {
		case o.code != 0 || sr.code != 0:
			if (o.code == 0) != (sr.code == 0) {
				add(fmt.Sprintf("refusal: sbx exit %d, srt exit %d", o.code, sr.code), seed,
					fmt.Sprintf("%s\n      sbx: %s\n      srt: %s", pols, firstLines(o.stderr, 1), firstLines(sr.stderr, 2)))
			} else {
				same++
			}
			continue
		}
		differs := false
		for _, p := range o.probes {
			a, okA := o.got[p]
			b, okB := sr.got[Probe{p.Op, o.rel(p.Path)}]
			if !okA || !okB || a.OK == b.OK {
				continue
			}
			differs = true
			want, known := o.want.OK[p]
			side := "model: no answer"
			switch {
			case known && want == a.OK:
				side = "sbx = model"
			case known && want == b.OK:
				side = "srt = model"
			}
			verb := map[bool]string{true: "allows", false: "denies"}
			k := fmt.Sprintf("%s, %s: sbx %s, srt %s (%s)", p.Op, whyKind(o, p), verb[a.OK], verb[b.OK], side)
			add(k, seed, fmt.Sprintf("%s %s under %s (sbx %s, srt %s)", p.Op, o.rel(p.Path), pols, a.Err, b.Err))
		}
		if !differs {
			same++
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return groups[order[i]].n > groups[order[j]].n })
	var b strings.Builder
	fmt.Fprintf(&b, "srt differential: %d cases, %d with no difference\n", cases, same)
	for _, k := range order {
		g := groups[k]
		fmt.Fprintf(&b, "%4d× %s; seeds %v\n      e.g. %s\n", g.n, k, g.seeds, g.example)
	}
	t.Log(b.String())
}

// whyKind names the model's reason for its answer on p, for grouping.
func whyKind(o *outcome, p Probe) string {
	w := o.want.Why[p]
	kind := "no model answer"
	switch {
	case w == "":
	case strings.Contains(w, "protected name"):
		kind = "a protected name"
	case strings.Contains(w, "denyWrite pinned"):
		kind = "a missing path under denyWrite"
	case strings.Contains(w, "denyWrite"):
		kind = "under denyWrite"
	case strings.Contains(w, "no writable root"):
		kind = "outside every writable root"
	case strings.Contains(w, "hidden by denyRead") || strings.Contains(w, "is not there"):
		kind = "under a denyRead"
		for _, m := range BuiltinMasks {
			if strings.Contains(w, filepath.Join(o.env.Home, m)) {
				kind = "under a built-in credential mask"
			}
		}
	case strings.Contains(w, "re-opens"):
		kind = "re-opened inside a denyRead"
	case strings.Contains(w, "inside "):
		kind = "inside a writable root"
	case strings.Contains(w, "no denyRead holds it"):
		kind = "readable, no denyRead"
	}
	if regexp.MustCompile(`(^|/)(lssh|lout|lsec|lauto|lkey|keys|lwork)(/|$)|-link`).MatchString(o.rel(p.Path)) {
		kind += ", through a symlink"
	}
	return kind
}

// category names the kind of path a probe touched, for grouping.
func category(rel string) string {
	switch {
	case regexp.MustCompile(`(^|/)(lssh|lout|lsec|lauto|lkey|keys|lwork)(/|$)|-link`).MatchString(rel):
		return "a path through a symlink (" + rel + ")"
	case strings.HasPrefix(rel, "home/.ssh") || strings.HasPrefix(rel, "home/.aws") || strings.HasPrefix(rel, "home/.config/gh"):
		return "a built-in credential mask (" + rel + ")"
	case regexp.MustCompile(`(^|/)(\.bashrc|\.profile|\.git|\.vscode|\.idea|\.mcp\.json|\.claude)(/|$)`).MatchString(rel):
		return "a protected name (" + rel + ")"
	case strings.HasSuffix(rel, ".pem") || strings.Contains(rel, "["):
		return "a glob's match (" + rel + ")"
	}
	return filepath.Dir(rel) + "/*"
}

// srtRun is one srt run's outcome.
type srtRun struct {
	code           int
	stdout, stderr string
	got            map[Probe]result // by relative path
	env            Env
}

// runSrt runs c's srt settings file under srt with the same probe list.
func runSrt(t *testing.T, c *Case) srtRun {
	t.Helper()
	dir, env, remove := materializeIn(t, "srt-", c)
	defer remove()
	probes := Probes(c, env)
	spec, _ := json.Marshal(probes)
	specFile := filepath.Join(dir, "probes.json")
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, srtBin, "--settings", env.Files[0], probeBin, specFile)
	cmd.Dir = env.Cwd
	cmd.Env = append(sbxEnv(env, dir), "TMPDIR=/tmp")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := srtRun{stdout: so.String(), stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running srt: %v", err)
	}
	var res []struct {
		Op, Path, Err string
		OK            bool
	}
	r.got = map[Probe]result{}
	if r.code == 0 {
		// srt prints the command's output after its own; take the JSON line.
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, "[") && json.Unmarshal([]byte(line), &res) == nil {
				break
			}
		}
		for _, x := range res {
			// By the path relative to the tree: the sbx run had a tree
			// of its own (the probes write).
			rel, _ := filepath.Rel(env.T, x.Path)
			r.got[Probe{x.Op, rel}] = result{x.OK, x.Err}
		}
	}
	r.env = env
	return r
}
