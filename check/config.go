package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sbx-sh/sbx/internal/settingsfile"
)

// Rule names, as used in [Finding.Rule] and in the "rules" object of the
// settings. The order of this list is the order in which [Config.Check]
// reports findings.
const (
	RuleLength      = "length"
	RuleCharset     = "charset"
	RuleMetachars   = "metachars"
	RuleStructure   = "structure"
	RulePrefix      = "prefix"
	RuleDeniedWords = "deniedWords"
	RulePaths       = "paths"

	// Rules reported by [CheckEnv], [CheckCwd] and [CheckConfirm]. They
	// are not switchable: callers decide whether to call those functions.
	RuleEnv     = "env"
	RuleCwd     = "cwd"
	RuleConfirm = "confirm"
)

// commandRules lists the switchable rules of [Config.Check], in order.
var commandRules = []string{
	RuleLength, RuleCharset, RuleMetachars, RuleStructure,
	RulePrefix, RuleDeniedWords, RulePaths,
}

// DefaultMaxLength is the default limit on the trimmed command length, in
// characters (Unicode code points).
const DefaultMaxLength = 300

// maxMaxLength bounds the configurable length so that a typo cannot
// silently switch the rule off; switch it off with rules.length instead.
const maxMaxLength = 100_000

// DefaultCharset is the default character-set pattern. The whole command
// must match it.
const DefaultCharset = `^[A-Za-z0-9_./:@%+=,\-\\ "']+$`

// Config is an immutable command-gate configuration. Build one with
// [Default] or [ParseConfig]; the zero value behaves like [Default] but is
// not meant to be used.
type Config struct {
	enabled    bool
	maxLength  int
	charsetSrc string
	charset    *regexp.Regexp
	rules      map[string]bool   // rule name -> on; every name in commandRules present
	prefixes   []*pattern        // allowed command patterns
	denied     map[string]string // lower-case word -> list it comes from
	built      bool              // set by Default/ParseConfig
}

// Default returns the built-in configuration: every rule on, the default
// length, character set, prefixes and denied words, and Enabled() false.
func Default() Config {
	c, err := defaultConfig()
	if err != nil {
		// The defaults are constants, checked by the tests; no input
		// reaches this.
		panic(fmt.Sprintf("check: default configuration is invalid: %v", err))
	}
	return c
}

// defaultConfig builds the default once; Configs are immutable, so
// copies may share its maps and patterns.
var defaultConfig = sync.OnceValues(func() (Config, error) { return build(settings{}) })

// orDefault makes the zero Config usable.
func (c Config) orDefault() Config {
	if !c.built {
		return Default()
	}
	return c
}

// Enabled reports whether `sbx -c` must run the gate before running a
// command ("enabled" in the settings; false by default). `sbx check`
// always checks, whatever this says.
func (c Config) Enabled() bool { return c.enabled }

// MaxLength returns the configured length limit.
func (c Config) MaxLength() int { return c.orDefault().maxLength }

// RuleOn reports whether the named rule of [Config.Check] is switched on.
// Unknown names report false.
func (c Config) RuleOn(rule string) bool { return c.orDefault().rules[rule] }

// Prefixes returns the allowed prefix patterns, as written.
func (c Config) Prefixes() []string {
	c = c.orDefault()
	out := make([]string, len(c.prefixes))
	for i, p := range c.prefixes {
		out[i] = p.src
	}
	return out
}

// DeniedWords returns the denied words in effect, sorted.
func (c Config) DeniedWords() []string {
	c = c.orDefault()
	out := make([]string, 0, len(c.denied))
	for w := range c.denied {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// settings is the decoded "commands" object. Pointers and nil slices mean
// "not given".
type settings struct {
	enabled                *bool
	maxLength              *int
	charset                *string
	rules                  map[string]bool
	allowedPrefixes        []string
	replaceDefaultPrefixes *bool
	deniedWords            []string
	allowWords             []string
}

// settingKeys lists the keys accepted in the "commands" object.
var settingKeys = []string{
	"enabled", "maxLength", "charset", "rules", "allowedPrefixes",
	"replaceDefaultPrefixes", "deniedWords", "allowWords",
}

// ParseConfig builds a Config from the value of the "commands" key of a
// settings file. nil, empty or JSON null input yields [Default]. Unknown
// keys, duplicate keys, wrong types and invalid values are errors naming
// the key.
func ParseConfig(raw json.RawMessage) (Config, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return Default(), nil
	}
	s, err := decodeSettings(trimmed)
	if err != nil {
		return Config{}, err
	}
	return build(s)
}

// FromSettings builds a Config from a whole settings file: it reads the
// "commands" key, or "sandbox.commands" for Claude-Code-shaped files, and
// ignores every other key. A file with neither yields [Default]; a file
// with both is an error.
func FromSettings(data []byte) (Config, error) {
	top, err := objectMembers(data)
	if err != nil {
		return Config{}, fmt.Errorf("settings: %w", err)
	}
	raw, inTop := top["commands"]
	if sb, ok := top["sandbox"]; ok {
		// "sandbox" belongs to other tools; only look inside when it is
		// an object, and ignore it otherwise.
		if inner, err := objectMembers(sb); err == nil {
			if nested, ok := inner["commands"]; ok {
				if inTop {
					return Config{}, errors.New(`settings: both "commands" and "sandbox.commands" are present; keep one`)
				}
				c, err := ParseConfig(nested)
				if err != nil {
					// ParseConfig's errors start with the key path
					// "commands"; make it "sandbox.commands".
					return Config{}, fmt.Errorf("sandbox.%w", err)
				}
				return c, nil
			}
		}
	}
	return ParseConfig(raw)
}

// LoadFile reads a settings file and calls [FromSettings].
func LoadFile(path string) (Config, error) {
	data, err := settingsfile.Read(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading settings file: %w", err)
	}
	c, err := FromSettings(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// decodeSettings decodes the "commands" object strictly.
func decodeSettings(raw []byte) (settings, error) {
	var s settings
	members, err := objectMembers(raw)
	if err != nil {
		return s, fmt.Errorf("commands: %w", err)
	}
	for key, val := range members {
		if !slices.Contains(settingKeys, key) {
			return s, fmt.Errorf("commands: unknown key %q (known keys: %s)", key, strings.Join(settingKeys, ", "))
		}
		if string(bytes.TrimSpace(val)) == "null" {
			return s, fmt.Errorf("commands.%s: null is not allowed; leave the key out for the default", key)
		}
		var err error
		switch key {
		case "enabled":
			s.enabled = new(bool)
			err = json.Unmarshal(val, s.enabled)
		case "maxLength":
			s.maxLength = new(int)
			err = json.Unmarshal(val, s.maxLength)
		case "charset":
			s.charset = new(string)
			err = json.Unmarshal(val, s.charset)
		case "replaceDefaultPrefixes":
			s.replaceDefaultPrefixes = new(bool)
			err = json.Unmarshal(val, s.replaceDefaultPrefixes)
		case "allowedPrefixes":
			err = unmarshalStrings(val, &s.allowedPrefixes)
		case "deniedWords":
			err = unmarshalStrings(val, &s.deniedWords)
		case "allowWords":
			err = unmarshalStrings(val, &s.allowWords)
		case "rules":
			s.rules, err = decodeRules(val)
		}
		if err != nil {
			return s, fmt.Errorf("commands.%s: %w", key, err)
		}
	}
	return s, nil
}

// unmarshalStrings decodes a JSON array of strings, refusing null items.
func unmarshalStrings(raw []byte, dst *[]string) error {
	var items []*string
	if err := json.Unmarshal(raw, &items); err != nil {
		return err
	}
	out := make([]string, len(items))
	for i, p := range items {
		if p == nil {
			return fmt.Errorf("item %d is null; want a string", i)
		}
		out[i] = *p
	}
	*dst = out
	return nil
}

// decodeRules decodes the "rules" object: known rule names to booleans.
func decodeRules(raw []byte) (map[string]bool, error) {
	members, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(members))
	for name, val := range members {
		if !slices.Contains(commandRules, name) {
			return nil, fmt.Errorf("unknown rule %q (known rules: %s)", name, strings.Join(commandRules, ", "))
		}
		var on bool
		if string(bytes.TrimSpace(val)) == "null" {
			return nil, fmt.Errorf("%s: null is not allowed; want true or false", name)
		}
		if err := json.Unmarshal(val, &on); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = on
	}
	return out, nil
}

// objectMembers decodes a JSON object into its members, refusing
// duplicate keys, non-objects and trailing data.
func objectMembers(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want a JSON object, got %s", describeToken(tok))
	}
	members := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		key, _ := tok.(string) // object keys are always strings
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("invalid JSON at key %q: %w", key, err)
		}
		if _, dup := members[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		members[key] = val
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: data after the object")
	}
	return members, nil
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// build validates decoded settings and produces a Config.
func build(s settings) (Config, error) {
	c := Config{
		maxLength:  DefaultMaxLength,
		charsetSrc: DefaultCharset,
		rules:      make(map[string]bool, len(commandRules)),
		built:      true,
	}
	if s.enabled != nil {
		c.enabled = *s.enabled
	}
	for _, r := range commandRules {
		on, given := s.rules[r]
		c.rules[r] = on || !given
	}
	if s.maxLength != nil {
		if *s.maxLength < 1 || *s.maxLength > maxMaxLength {
			return Config{}, fmt.Errorf("commands.maxLength: %d is out of range; want 1 to %d (switch the rule off with rules.length)", *s.maxLength, maxMaxLength)
		}
		c.maxLength = *s.maxLength
	}
	if s.charset != nil {
		if *s.charset == "" {
			return Config{}, errors.New("commands.charset: empty pattern; leave the key out for the default or switch the rule off with rules.charset")
		}
		c.charsetSrc = *s.charset
	}
	re, err := regexp.Compile(`^(?:` + c.charsetSrc + `)$`)
	if err != nil {
		return Config{}, fmt.Errorf("commands.charset: %w", err)
	}
	c.charset = re

	if c.denied, err = buildDenied(s.deniedWords, s.allowWords); err != nil {
		return Config{}, err
	}
	if c.prefixes, err = buildPrefixes(s, c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// buildPrefixes compiles the default and user prefixes.
func buildPrefixes(s settings, c Config) ([]*pattern, error) {
	var srcs []string
	if s.replaceDefaultPrefixes == nil || !*s.replaceDefaultPrefixes {
		srcs = append(srcs, DefaultPrefixes()...)
	}
	nDefault := len(srcs)
	srcs = append(srcs, s.allowedPrefixes...)
	if len(srcs) == 0 && c.rules[RulePrefix] {
		return nil, errors.New("commands.replaceDefaultPrefixes is true but allowedPrefixes is empty, so no command could pass; add allowedPrefixes or switch rules.prefix off")
	}
	out := make([]*pattern, 0, len(srcs))
	for i, src := range srcs {
		p, err := compileEntry(src)
		// A user prefix naming a denied word could never match; say so.
		// Defaults are exempt: denying "npm" should just disable npm.
		if err == nil && i >= nDefault && c.rules[RuleDeniedWords] {
			err = p.checkDenied(c.denied)
		}
		if err != nil {
			if i < nDefault {
				return nil, fmt.Errorf("commands: default prefix %q: %w", src, err)
			}
			return nil, fmt.Errorf("commands.allowedPrefixes[%d] %q: %w", i-nDefault, src, err)
		}
		out = append(out, p)
	}
	return out, nil
}
