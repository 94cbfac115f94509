package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/sbx-sh/sbx/seccomp"
)

// TestVersion builds sbx as scripts/release.sh does (without cgo,
// -trimpath, stamped with -X main.version=1.2.3 -X main.commit=abc) and
// checks what sbx version says and the SBOM scripts/sbom writes for it.
func TestVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sbx")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=1.2.3 -X main.commit=abc", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building sbx: %v\n%s", err, out)
	}
	t.Run("ldflags", func(t *testing.T) { testVersionLdflags(t, bin) })
	t.Run("sbom", func(t *testing.T) { testVersionSBOM(t, bin) })
}

// wantDigest is what sbx version shows of the embedded seccomp programs.
func wantDigest(t *testing.T) string {
	d := seccomp.Digest()
	if d == "none" {
		return d
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(d) {
		t.Fatalf("seccomp.Digest() = %q, want 64 hex digits", d)
	}
	if d2 := seccomp.Digest(); d2 != d {
		t.Fatalf("seccomp.Digest() is not stable: %s, then %s", d, d2)
	}
	return d[:12]
}

func testVersionLdflags(t *testing.T, bin string) {
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("sbx version: %v\n%s", err, out)
	}
	line := strings.TrimSpace(string(out))
	want := "sbx 1.2.3 (commit abc, seccomp " + wantDigest(t) + "; " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + "; "
	if !strings.HasPrefix(line, want) || strings.Contains(line, "\n") {
		t.Fatalf("sbx version:\n got %q\nwant %q…", line, want)
	}
	if !regexp.MustCompile(`; landlock ABI \d+\)$`).MatchString(line) {
		t.Fatalf("sbx version: %q has no landlock ABI", line)
	}
}

// TestVersionFallback: without -ldflags, cmdVersion still says something
// for the version and commit (the build information's, or devel and
// unknown) and shows the digest.
func TestVersionFallback(t *testing.T) {
	if version != "" || commit != "" {
		t.Skip("this test binary was built with -X main.version or main.commit")
	}
	var b bytes.Buffer
	if code := cmdVersion(&b); code != 0 {
		t.Fatalf("cmdVersion = %d", code)
	}
	re := regexp.MustCompile(`^sbx \S+ \(commit \S+, seccomp ` + regexp.QuoteMeta(wantDigest(t)) + `; go`)
	if !re.MatchString(b.String()) {
		t.Fatalf("cmdVersion wrote %q, want it to match %s", b.String(), re)
	}
}

// testVersionSBOM runs scripts/sbom on bin and checks the CycloneDX it
// writes: the main module, golang.org/x/sys, the toolchain, the binary.
func testVersionSBOM(t *testing.T, bin string) {
	out, err := exec.Command("go", "run", "../../scripts/sbom", "-version", "1.2.3", "-timestamp", "1700000000", bin).Output()
	if err != nil {
		t.Fatalf("scripts/sbom: %v\n%s", err, stderrOf(err))
	}
	type comp struct {
		Type    string `json:"type"`
		BOMRef  string `json:"bom-ref"`
		Name    string `json:"name"`
		Version string `json:"version"`
		PURL    string `json:"purl"`
		Hashes  []struct {
			Alg     string `json:"alg"`
			Content string `json:"content"`
		} `json:"hashes"`
	}
	var bom struct {
		BOMFormat    string `json:"bomFormat"`
		SpecVersion  string `json:"specVersion"`
		SerialNumber string `json:"serialNumber"`
		Metadata     struct {
			Timestamp string `json:"timestamp"`
			Component comp   `json:"component"`
		} `json:"metadata"`
		Components   []comp `json:"components"`
		Dependencies []struct {
			Ref       string   `json:"ref"`
			DependsOn []string `json:"dependsOn"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(out, &bom); err != nil {
		t.Fatalf("scripts/sbom wrote no valid CycloneDX JSON: %v\n%s", err, out)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" || bom.Metadata.Timestamp != "2023-11-14T22:13:20Z" ||
		!regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(bom.SerialNumber) {
		t.Errorf("header: %q %q %q %q", bom.BOMFormat, bom.SpecVersion, bom.Metadata.Timestamp, bom.SerialNumber)
	}
	if m := bom.Metadata.Component; m.Type != "application" || m.Name != "github.com/sbx-sh/sbx" || m.Version != "1.2.3" ||
		m.PURL != "pkg:golang/github.com/sbx-sh/sbx@v1.2.3" {
		t.Errorf("the main module: %+v", m)
	}
	byName := map[string]comp{}
	for _, c := range bom.Components {
		byName[c.Name] = c
	}
	x := byName["golang.org/x/sys"]
	if x.Type != "library" || !strings.HasPrefix(x.Version, "v") || x.PURL != "pkg:golang/golang.org/x/sys@"+x.Version ||
		len(x.Hashes) != 1 || x.Hashes[0].Alg != "SHA-256" || len(x.Hashes[0].Content) != 64 {
		t.Errorf("golang.org/x/sys: %+v", x)
	}
	if std := byName["stdlib"]; std.Version != runtime.Version() || std.PURL != "pkg:golang/stdlib@"+strings.TrimPrefix(runtime.Version(), "go") {
		t.Errorf("the Go toolchain: %+v", std)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if f := byName["sbx"]; f.Type != "file" || len(f.Hashes) != 1 || f.Hashes[0].Content != hex.EncodeToString(sum[:]) {
		t.Errorf("the binary: %+v, want SHA-256 %x", f, sum)
	}
	if len(bom.Dependencies) != 1 || bom.Dependencies[0].Ref != bom.Metadata.Component.BOMRef ||
		!strings.Contains(strings.Join(bom.Dependencies[0].DependsOn, " "), x.BOMRef) {
		t.Errorf("dependencies: %+v", bom.Dependencies)
	}
	if runtime.GOOS == "linux" {
		if out, err := exec.Command("go", "run", "../../scripts/sbom", "-check-static", bin).CombinedOutput(); err != nil {
			t.Errorf("scripts/sbom -check-static on a CGO_ENABLED=0 build: %v\n%s", err, out)
		}
	}
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
