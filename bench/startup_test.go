//go:build linux

package bench

import (
	"os/exec"
	"path/filepath"
	"testing"
)

func buildSbx(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "sbx")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/sbx").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func run(b *testing.B, dir string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// BenchmarkStartup is one `sbx -- /bin/true`, the whole sandbox included.
func BenchmarkStartup(b *testing.B) {
	sbx := buildSbx(b)
	dir := b.TempDir()
	for b.Loop() {
		run(b, dir, sbx, "--", "/bin/true")
	}
}

// BenchmarkStartupBare is the same /bin/true without a sandbox.
func BenchmarkStartupBare(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		run(b, dir, "/bin/true")
	}
}

// BenchmarkStartupWritableTree is sbx start-up with a writable working
// tree of 100k files, where protected names are searched.
func BenchmarkStartupWritableTree(b *testing.B) {
	sbx := buildSbx(b)
	dir := b.TempDir()
	if err := MakeTree(dir, 100_000); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		run(b, dir, sbx, "--allow-write", ".", "--", "/bin/true")
	}
}
