// Command sbom writes a CycloneDX 1.5 JSON SBOM for Go binaries, from the
// build information the go command stamps into them (what
// `go version -m -json BINARY` prints), and checks that Linux binaries are
// static. scripts/release.sh runs it; it uses the standard library only.
//
//	sbom [-version V] [-timestamp UNIX] [-o FILE] BINARY...
//	sbom [-version V] [-timestamp UNIX] [-o FILE] -json FILE   (go version -m -json output; - is stdin)
//	sbom -check-static BINARY...
//
// The SBOM's subject (metadata.component) is the main module at -version
// (default: the version stamped in). Its components are the Go standard
// library of each toolchain that built a binary (pkg:golang/stdlib), every
// module linked in (pkg:golang/PATH@VERSION; its go.sum h1: hash, a SHA-256,
// as hex), and each BINARY as a file with its SHA-256. The output depends
// only on the inputs and -timestamp (default $SOURCE_DATE_EPOCH, else
// none): the serial number is derived from the content, so that a rebuilt
// release has the same SBOM byte for byte.
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	log := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "sbom: "+format+"\n", a...)
		os.Exit(1)
	}
	checkStatic := flag.Bool("check-static", false, "check that each BINARY is a static ELF executable built with CGO_ENABLED=0, and write no SBOM")
	version := flag.String("version", "", "the main module's version (default: the one stamped in the binary)")
	timestamp := flag.String("timestamp", os.Getenv("SOURCE_DATE_EPOCH"), "metadata.timestamp, in Unix seconds (default $SOURCE_DATE_EPOCH; none when empty)")
	out := flag.String("o", "-", "where to write the SBOM (- is stdout)")
	jsonIn := flag.String("json", "", "read the build information from this output of `go version -m -json` (- is stdin) instead of from binaries")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sbom [-version V] [-timestamp UNIX] [-o FILE] BINARY... | -json FILE\n       sbom -check-static BINARY...")
		flag.PrintDefaults()
	}
	flag.Parse()

	if *checkStatic {
		if flag.NArg() == 0 {
			flag.Usage()
			os.Exit(2)
		}
		bad := false
		for _, f := range flag.Args() {
			if err := staticCheck(f); err != nil {
				fmt.Fprintf(os.Stderr, "sbom: %s: NOT STATIC: %v\n", f, err)
				bad = true
				continue
			}
			fmt.Printf("static: %s\n", f)
		}
		if bad {
			os.Exit(1)
		}
		return
	}

	var inputs []input
	switch {
	case *jsonIn != "" && flag.NArg() == 0:
		var b []byte
		var err error
		if *jsonIn == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(*jsonIn)
		}
		if err != nil {
			log("%v", err)
		}
		var bi debug.BuildInfo
		if err := json.Unmarshal(b, &bi); err != nil {
			log("%s: not the output of go version -m -json: %v", *jsonIn, err)
		}
		inputs = append(inputs, input{info: &bi})
	case *jsonIn == "" && flag.NArg() > 0:
		for _, f := range flag.Args() {
			bi, err := buildinfo.ReadFile(f)
			if err != nil {
				log("%s: %v", f, err)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				log("%v", err)
			}
			sum := sha256.Sum256(b)
			inputs = append(inputs, input{name: filepath.Base(f), sha256: hex.EncodeToString(sum[:]), info: bi})
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
	var ts string
	if *timestamp != "" {
		sec, err := strconv.ParseInt(*timestamp, 10, 64)
		if err != nil {
			log("-timestamp %q: not Unix seconds", *timestamp)
		}
		ts = time.Unix(sec, 0).UTC().Format(time.RFC3339)
	}
	bom, err := makeBOM(inputs, *version, ts)
	if err != nil {
		log("%v", err)
	}
	if *out == "-" {
		_, err = os.Stdout.Write(bom)
	} else {
		err = os.WriteFile(*out, bom, 0o644)
	}
	if err != nil {
		log("%v", err)
	}
}

// input is one binary's build information; name and sha256 are empty when
// it came from go version -m -json.
type input struct {
	name, sha256 string
	info         *debug.BuildInfo
}

// The subset of CycloneDX 1.5 this writes; field order is output order.
type bom struct {
	BOMFormat    string       `json:"bomFormat"`
	SpecVersion  string       `json:"specVersion"`
	SerialNumber string       `json:"serialNumber,omitempty"`
	Version      int          `json:"version"`
	Metadata     metadata     `json:"metadata"`
	Components   []component  `json:"components"`
	Dependencies []dependency `json:"dependencies"`
}

type metadata struct {
	Timestamp string    `json:"timestamp,omitempty"`
	Tools     tools     `json:"tools"`
	Component component `json:"component"`
}

type tools struct {
	Components []component `json:"components"`
}

type component struct {
	Type        string     `json:"type"`
	BOMRef      string     `json:"bom-ref,omitempty"`
	Group       string     `json:"group,omitempty"`
	Name        string     `json:"name"`
	Version     string     `json:"version,omitempty"`
	Description string     `json:"description,omitempty"`
	Scope       string     `json:"scope,omitempty"`
	Hashes      []hash     `json:"hashes,omitempty"`
	PURL        string     `json:"purl,omitempty"`
	Properties  []property `json:"properties,omitempty"`
}

type hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

func makeBOM(inputs []input, version, timestamp string) ([]byte, error) {
	mainPath := inputs[0].info.Main.Path
	if mainPath == "" {
		return nil, errors.New("no main module in the build information (built with go run, or not in module mode?)")
	}
	if version == "" {
		version = inputs[0].info.Main.Version
	}
	if version == "(devel)" {
		version = ""
	}
	modVersion := version // a module version has its v: the tag of 1.2.3 is v1.2.3
	if modVersion != "" && modVersion[0] >= '0' && modVersion[0] <= '9' {
		modVersion = "v" + modVersion
	}
	subject := component{
		Type:    "application",
		BOMRef:  purl(mainPath, modVersion),
		Name:    mainPath,
		Version: version,
		PURL:    purl(mainPath, modVersion),
	}
	var pkgs []string
	mods := map[string]*component{} // by bom-ref
	targets := map[string][]string{}
	add := func(c component, target string) {
		if _, ok := mods[c.BOMRef]; !ok {
			mods[c.BOMRef] = &c
		}
		if target != "" && !slices.Contains(targets[c.BOMRef], target) {
			targets[c.BOMRef] = append(targets[c.BOMRef], target)
		}
	}
	var files []component
	for _, in := range inputs {
		bi := in.info
		if bi.Main.Path != mainPath {
			return nil, fmt.Errorf("binaries of different main modules: %s and %s", mainPath, bi.Main.Path)
		}
		if !slices.Contains(pkgs, bi.Path) {
			pkgs = append(pkgs, bi.Path)
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		target := ""
		if settings["GOOS"] != "" {
			target = settings["GOOS"] + "/" + settings["GOARCH"]
		}
		gov := strings.Fields(bi.GoVersion + " ")[0] // "go1.26.8 X:exp" is go1.26.8
		add(component{
			Type:        "library",
			BOMRef:      purl("stdlib", strings.TrimPrefix(gov, "go")),
			Name:        "stdlib",
			Version:     gov,
			Description: "The Go toolchain " + gov + ": its standard library and runtime, linked into the binary",
			Scope:       "required",
			PURL:        purl("stdlib", strings.TrimPrefix(gov, "go")),
		}, target)
		for _, d := range bi.Deps {
			c, err := moduleComponent(d)
			if err != nil {
				return nil, err
			}
			add(c, target)
		}
		if in.name != "" {
			files = append(files, fileComponent(in, version))
		}
	}
	subject.Properties = []property{{"golang:package", strings.Join(pkgs, " ")}}

	refs := make([]string, 0, len(mods))
	for ref := range mods {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	var comps []component
	for _, ref := range refs {
		c := *mods[ref]
		if len(targets[ref]) > 0 && len(files) > 1 {
			t := targets[ref]
			slices.Sort(t)
			c.Properties = append(c.Properties, property{"golang:targets", strings.Join(t, " ")})
		}
		comps = append(comps, c)
	}
	slices.SortFunc(files, func(a, b component) int { return strings.Compare(a.Name, b.Name) })
	comps = append(comps, files...)

	b := bom{
		BOMFormat:   "CycloneDX",
		SpecVersion: "1.5",
		Version:     1,
		Metadata: metadata{
			Timestamp: timestamp,
			Tools: tools{Components: []component{{
				Type:        "application",
				Group:       "github.com/sbx-sh/sbx",
				Name:        "scripts/sbom",
				Description: "CycloneDX from Go build information (go version -m)",
			}}},
			Component: subject,
		},
		Components:   comps,
		Dependencies: []dependency{{Ref: subject.BOMRef, DependsOn: refs}},
	}
	// The serial number is a name-based UUID (version 5 layout, SHA-256) of
	// the rest: the same release gives the same SBOM.
	body, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	u := sha256.Sum256(body)
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u[:16])
	b.SerialNumber = fmt.Sprintf("urn:uuid:%s-%s-%s-%s-%s", x[:8], x[8:12], x[12:16], x[16:20], x[20:])
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// moduleComponent is the component of one module a binary links (its
// replacement, when replaced), with its go.sum hash.
func moduleComponent(d *debug.Module) (component, error) {
	m, props := d, []property(nil)
	if d.Replace != nil {
		m = d.Replace
		props = append(props, property{"golang:replaces", d.Path + "@" + d.Version})
	}
	c := component{
		Type:    "library",
		BOMRef:  purl(m.Path, m.Version),
		Name:    m.Path,
		Version: m.Version,
		Scope:   "required",
		PURL:    purl(m.Path, m.Version),
	}
	if m.Sum != "" {
		props = append(props, property{"golang:sum", m.Sum})
		if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
			// h1: is the base64 SHA-256 of the module's file list
			// and their SHA-256s (golang.org/x/mod/sumdb/dirhash).
			b, err := base64.StdEncoding.DecodeString(h)
			if err != nil || len(b) != sha256.Size {
				return component{}, fmt.Errorf("%s@%s: go.sum hash %q is not an h1: SHA-256", m.Path, m.Version, m.Sum)
			}
			c.Hashes = []hash{{"SHA-256", hex.EncodeToString(b)}}
		}
	}
	c.Properties = props
	return c, nil
}

// fileComponent is the component of one binary: its hash and build
// settings.
func fileComponent(in input, version string) component {
	bi := in.info
	f := component{
		Type:    "file",
		BOMRef:  "file:" + in.name,
		Name:    in.name,
		Version: version,
		Hashes:  []hash{{"SHA-256", in.sha256}},
		Properties: []property{
			{"golang:package", bi.Path},
			{"golang:goversion", bi.GoVersion},
		},
	}
	for _, s := range bi.Settings {
		f.Properties = append(f.Properties, property{"golang:build:" + s.Key, s.Value})
	}
	return f
}

// purl is the package URL of Go module path at version (which may be
// empty): pkg:golang/NAMESPACE/NAME@VERSION, each part percent-encoded.
func purl(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = escape(s)
	}
	p := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		p += "@" + escape(version)
	}
	return p
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// staticCheck reports why file is not a static ELF executable built
// without cgo: a program interpreter (PT_INTERP, the dynamic loader), a
// shared library it needs (DT_NEEDED), or CGO_ENABLED other than 0 in its
// build information.
func staticCheck(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("it has a program interpreter (PT_INTERP): it is dynamically linked")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	if len(libs) > 0 {
		return fmt.Errorf("it needs shared libraries: %s", strings.Join(libs, " "))
	}
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return err
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			if s.Value != "0" {
				return fmt.Errorf("built with CGO_ENABLED=%s", s.Value)
			}
			return nil
		}
	}
	return errors.New("its build information does not say CGO_ENABLED=0")
}
