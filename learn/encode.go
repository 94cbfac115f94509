package learn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sbx-sh/sbx/policy"
)

// Formats are the output formats Encode knows, the default first.
func Formats() []string { return []string{"sbx", "srt", "claude", "flags"} }

// Encode writes r in format:
//
//   - sbx: an srt-shaped settings file plus sbx's own "presets";
//   - srt: only the keys srt accepts (its required lists included, the
//     presets' caches as allowWrite paths);
//   - claude: a Claude Code settings file whose "sandbox" block holds
//     the lists, as srt's keys;
//   - flags: one command line of sbx flags, --reads declared first.
//
// With existing (the bytes of the settings file the output replaces),
// the learned entries are added to its lists, each list keeping its
// entries and order and gaining the new ones sorted, and every other key
// is kept as it was. The output ends in a newline and is the same bytes
// for the same Result.
func (r *Result) Encode(format string, existing []byte) ([]byte, error) {
	switch format {
	case "flags":
		if len(existing) > 0 {
			return nil, errors.New("learn: the flags format is a command line; it cannot add to a settings file: use --format sbx, srt or claude")
		}
		return r.flags(), nil
	case "sbx", "srt", "claude":
		return r.settings(format, existing)
	}
	return nil, fmt.Errorf("learn: format %q is unknown; use one of %s", format, strings.Join(Formats(), ", "))
}

// show writes p for a policy: "./…" under the working directory, "~/…"
// under HOME, absolute elsewhere.
func (r *Result) show(p string) string {
	if r.cwd != "" && policy.Within(p, r.cwd) {
		rel, _ := filepath.Rel(r.cwd, p)
		if rel == "." {
			return "."
		}
		return "./" + rel
	}
	if r.home != "" && r.home != "/" && policy.Within(p, r.home) {
		rel, _ := filepath.Rel(r.home, p)
		if rel == "." {
			return "~"
		}
		return "~/" + rel
	}
	return p
}

// globChars are what sbx's matcher reads as a glob in a path entry.
const globChars = "*?[{\\"

// pathEntry is one path as a settings list holds it: a string, or, when
// it holds glob characters, {"path": …, "literal": true} (sbx's and
// Claude Code's form). srt has no literal form: the characters are
// escaped with "\".
func (r *Result) pathEntry(p, format string) any {
	s := r.show(p)
	if !strings.ContainsAny(s, globChars) {
		return s
	}
	if format == "srt" {
		var b strings.Builder
		for _, c := range s {
			if strings.ContainsRune(globChars, c) {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return literalPath{s, true}
}

// literalPath is sbx's and Claude Code's literal path entry.
type literalPath struct {
	Path    string `json:"path"`
	Literal bool   `json:"literal"`
}

func (r *Result) pathList(ps []string, format string) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, r.pathEntry(p, format))
	}
	return out
}

// lists is what one format writes, by dotted key within the policy
// object (the file itself, or its "sandbox" block).
func (r *Result) lists(format string) []listKey {
	write := r.AllowWrite
	if format != "sbx" {
		write = outermost(append(append([]string(nil), write...), r.PresetPaths...))
	}
	ls := []listKey{
		{"filesystem", "allowRead", r.pathList(r.AllowRead, format)},
		{"filesystem", "denyRead", r.pathList(r.DenyRead, format)},
		{"filesystem", "allowWrite", r.pathList(write, format)},
		{"network", "allowedDomains", strs(r.AllowedDomains)},
		{"network", "allowUnixSockets", r.pathList(r.AllowUnixSockets, "srt")},
	}
	if format == "sbx" {
		ls = append(ls, listKey{"", "presets", strs(r.Presets)})
	}
	return ls
}

type listKey struct {
	section, key string
	add          []any
}

func strs(ss []string) []any {
	out := make([]any, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

// required are srt's required lists, written empty when nothing fills
// them (sbx's loader needs both objects too).
var required = []listKey{
	{"network", "allowedDomains", nil}, {"network", "deniedDomains", nil},
	{"filesystem", "denyRead", nil}, {"filesystem", "allowWrite", nil}, {"filesystem", "denyWrite", nil},
}

func (r *Result) settings(format string, existing []byte) ([]byte, error) {
	top := &object{}
	if len(bytes.TrimSpace(existing)) > 0 {
		var err error
		if top, err = parseObject(existing); err != nil {
			return nil, fmt.Errorf("learn: the settings file to add to: %w", err)
		}
	}
	claudeShape := top.has("sandbox") || top.has("permissions")
	if len(existing) > 0 && claudeShape != (format == "claude") {
		if claudeShape {
			return nil, fmt.Errorf("learn: the settings file to add to is Claude Code's (a \"sandbox\" block): use --format claude, not %s", format)
		}
		return nil, fmt.Errorf("learn: the settings file to add to is srt-shaped: use --format sbx or srt, not claude")
	}
	base := top
	if format == "claude" {
		sb, err := top.child("sandbox")
		if err != nil {
			return nil, err
		}
		if len(existing) == 0 {
			sb.set("enabled", json.RawMessage("true"))
		}
		base = sb
	}
	for _, lk := range required {
		if format == "claude" {
			break // Claude Code's block needs none of them
		}
		o, err := base.child(lk.section)
		if err != nil {
			return nil, err
		}
		if !o.has(lk.key) {
			o.set(lk.key, json.RawMessage("[]"))
		}
	}
	for _, lk := range r.lists(format) {
		if len(lk.add) == 0 {
			continue
		}
		o := base
		if lk.section != "" {
			var err error
			if o, err = base.child(lk.section); err != nil {
				return nil, err
			}
		}
		if err := o.addToList(lk.key, lk.add); err != nil {
			return nil, err
		}
	}
	raw, err := top.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// flags is the flags format: one line, --reads declared first.
func (r *Result) flags() []byte {
	args := []string{"--reads", "declared"}
	for _, p := range r.AllowRead {
		args = append(args, "--allow-read", r.show(p))
	}
	for _, p := range r.DenyRead {
		args = append(args, "--deny-read", r.show(p))
	}
	for _, p := range r.AllowWrite {
		args = append(args, "--allow-write", r.show(p))
	}
	for _, n := range r.Presets {
		args = append(args, "--preset", n)
	}
	for _, h := range r.AllowedDomains {
		args = append(args, "--allow-domain", h)
	}
	for _, s := range r.AllowUnixSockets {
		args = append(args, "--allow-unix-socket", r.show(s))
	}
	return []byte(ShellJoin(args) + "\n")
}

// ShellJoin quotes args for a POSIX shell: a word of only safe
// characters as it is, any other in single quotes. A leading "~/"
// stays outside the quotes, so the shell expands it as sbx would.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(a string) string {
	if a == "" {
		return "''"
	}
	safe := true
	for _, c := range a {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-./:@%+=,", c)) {
			safe = false
			break
		}
	}
	if safe {
		return a
	}
	if rest, ok := strings.CutPrefix(a, "~/"); ok && !strings.HasPrefix(rest, "~") {
		return "~/" + shellQuote(rest)
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
