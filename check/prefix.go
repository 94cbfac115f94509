package check

import (
	"errors"
	"fmt"
	"strings"
)

// yarnBuiltins are yarn (v1 and Berry) subcommands that `yarn <name>` runs
// as yarn itself rather than as a package.json script. The default yarn
// prefix refuses them as script names: `yarn add -- left-pad` would
// otherwise pass as "script add".
var yarnBuiltins = []string{
	"access", "add", "audit", "autoclean", "bin", "cache", "check", "config",
	"constraints", "create", "dedupe", "dlx", "exec", "explain", "generate-lock-entry",
	"global", "help", "import", "info", "init", "install", "licenses", "link",
	"list", "login", "logout", "node", "npm", "outdated", "owner", "pack",
	"patch", "patch-commit", "plugin", "policies", "publish", "rebuild",
	"remove", "run", "set", "stage", "tag", "team", "unlink", "unplug", "up",
	"upgrade", "upgrade-interactive", "version", "versions", "why",
	"workspace", "workspaces",
}

// DefaultPrefixes returns the built-in allowed prefix patterns, in the
// grammar documented in the package comment.
func DefaultPrefixes() []string {
	return []string{
		"npm run <script> [-- ...]",
		"pnpm run <script> [-- ...]",
		"yarn [run] <script!" + strings.Join(yarnBuiltins, "|") + "> [-- ...]",
		"dotnet (run|watch|test|build) ...",
		"cargo (run|test|build|watch) ...",
		"go (run|test|build) ...",
	}
}

// maxPatternDepth bounds bracket nesting in a pattern.
const maxPatternDepth = 16

type nodeKind int

const (
	litNode  nodeKind = iota // a literal word, case-insensitive
	wordNode                 // <name>: one word, not a flag, not excluded
	optNode                  // [ ... ]: alts[0] or nothing
	altNode                  // ( a | b ): one of alts
	restNode                 // ... or [args]: every remaining word
)

type node struct {
	kind   nodeKind
	text   string   // litNode: the word; wordNode: the name
	except []string // wordNode: refused values
	alts   [][]node // optNode (one) and altNode (several)
}

// pattern is one compiled allowed-prefix entry.
type pattern struct {
	src string
	seq []node
}

// match reports whether argv matches the whole pattern.
func (p *pattern) match(argv []string) bool {
	return matchSeq(p.seq, argv, func(rest []string) bool { return len(rest) == 0 })
}

// matchSeq matches nodes against a prefix of words and calls k with what
// is left, backtracking over optional groups and alternatives.
func matchSeq(nodes []node, words []string, k func([]string) bool) bool {
	if len(nodes) == 0 {
		return k(words)
	}
	n, next := nodes[0], nodes[1:]
	cont := func(rest []string) bool { return matchSeq(next, rest, k) }
	switch n.kind {
	case litNode:
		return len(words) > 0 && strings.EqualFold(words[0], n.text) && cont(words[1:])
	case wordNode:
		return len(words) > 0 && n.accepts(words[0]) && cont(words[1:])
	case optNode:
		return matchSeq(n.alts[0], words, cont) || cont(words)
	case altNode:
		for _, alt := range n.alts {
			if matchSeq(alt, words, cont) {
				return true
			}
		}
		return false
	case restNode:
		return cont(nil)
	}
	return false
}

// accepts reports whether a placeholder may stand for w.
func (n node) accepts(w string) bool {
	if w == "" || strings.HasPrefix(w, "-") {
		return false
	}
	for _, e := range n.except {
		if strings.EqualFold(w, e) {
			return false
		}
	}
	return true
}

var (
	toolEntry   = lazyRegexp(`^([A-Za-z][A-Za-z0-9_]*)\((.*)\)$`)
	placeholder = lazyRegexp(`^[A-Za-z][A-Za-z0-9_-]*$`)
)

// compileEntry compiles one allowedPrefixes entry: a Claude-style
// Bash(...) entry or a pattern in the prefix grammar.
func compileEntry(src string) (*pattern, error) {
	s := strings.TrimSpace(src)
	if m := toolEntry().FindStringSubmatch(s); m != nil {
		if m[1] != "Bash" {
			return nil, fmt.Errorf("unsupported tool %q: only Bash(...) entries are understood", m[1])
		}
		return compileBash(src, m[2])
	}
	if s == "Bash" {
		return nil, errors.New("a bare Bash entry would allow every command; name the command, as in Bash(git:*)")
	}
	return compilePattern(src)
}

// compileBash compiles the inside of Bash(...): "cmd words:*" allows the
// words followed by anything, "cmd words" exactly those words.
func compileBash(src, inner string) (*pattern, error) {
	body, prefix := strings.CutSuffix(inner, ":*")
	words := strings.Fields(body)
	if len(words) == 0 {
		return nil, errors.New("empty Bash(...) entry; name the command, as in Bash(git:*)")
	}
	p := &pattern{src: src}
	for _, w := range words {
		if strings.ContainsAny(w, "*?") {
			return nil, fmt.Errorf("wildcard in %q: only a trailing :* is supported", w)
		}
		p.seq = append(p.seq, node{kind: litNode, text: w})
	}
	if prefix {
		p.seq = append(p.seq, node{kind: restNode})
	}
	return p, nil
}

// compilePattern compiles an entry in the prefix grammar.
func compilePattern(src string) (*pattern, error) {
	toks, err := lexPattern(src)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("empty pattern")
	}
	ps := &patternParser{toks: toks}
	seq, err := ps.seq(0)
	if err != nil {
		return nil, err
	}
	if ps.i < len(toks) {
		return nil, fmt.Errorf("unexpected %q", toks[ps.i])
	}
	if seq[0].kind != litNode {
		return nil, errors.New("a pattern must start with a literal command word")
	}
	if err := checkTrailing(seq, true); err != nil {
		return nil, err
	}
	return &pattern{src: src, seq: seq}, nil
}

// lexPattern splits a pattern into words, placeholders and the one-byte
// tokens ( ) [ ] |.
func lexPattern(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == ' ' || c == '\t':
			i++
		case strings.IndexByte("()[]|", c) >= 0:
			toks = append(toks, src[i:i+1])
			i++
		case c == '<':
			end := strings.IndexByte(src[i:], '>')
			if end < 0 {
				return nil, fmt.Errorf("unclosed %q at byte %d", "<", i)
			}
			toks = append(toks, src[i:i+end+1])
			i += end + 1
		case c == '>':
			return nil, fmt.Errorf("unexpected %q at byte %d", ">", i)
		default:
			j := i
			for j < len(src) && strings.IndexByte(" \t()[]|<>", src[j]) < 0 {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		}
	}
	return toks, nil
}

type patternParser struct {
	toks []string
	i    int
}

// seq parses items up to the end or a closing ")", "]" or "|", which it
// leaves for the caller.
func (p *patternParser) seq(depth int) ([]node, error) {
	if depth > maxPatternDepth {
		return nil, fmt.Errorf("groups nested deeper than %d", maxPatternDepth)
	}
	var seq []node
	for p.i < len(p.toks) {
		tok := p.toks[p.i]
		switch {
		case tok == ")" || tok == "]" || tok == "|":
			return seq, nil
		case tok == "(":
			p.i++
			n, err := p.alternation(depth + 1)
			if err != nil {
				return nil, err
			}
			seq = append(seq, n)
		case tok == "[":
			p.i++
			n, err := p.optional(depth + 1)
			if err != nil {
				return nil, err
			}
			seq = append(seq, n)
		case tok == "...":
			p.i++
			seq = append(seq, node{kind: restNode})
		case strings.HasPrefix(tok, "<"):
			p.i++
			n, err := parsePlaceholder(tok)
			if err != nil {
				return nil, err
			}
			seq = append(seq, n)
		default:
			p.i++
			seq = append(seq, node{kind: litNode, text: tok})
		}
	}
	return seq, nil
}

// alternation parses "a | b )" after the opening "(".
func (p *patternParser) alternation(depth int) (node, error) {
	n := node{kind: altNode}
	for {
		alt, err := p.seq(depth)
		if err != nil {
			return node{}, err
		}
		if len(alt) == 0 {
			return node{}, errors.New("empty alternative in ( ... ); use [ ... ] for an optional part")
		}
		n.alts = append(n.alts, alt)
		if p.i >= len(p.toks) {
			return node{}, errors.New(`unclosed "("`)
		}
		tok := p.toks[p.i]
		p.i++
		switch tok {
		case ")":
			return n, nil
		case "|":
			continue
		default:
			return node{}, fmt.Errorf("unexpected %q inside ( ... )", tok)
		}
	}
}

// optional parses "... ]" after the opening "[". "[args]" means "any
// remaining words", like "...".
func (p *patternParser) optional(depth int) (node, error) {
	inner, err := p.seq(depth)
	if err != nil {
		return node{}, err
	}
	if p.i >= len(p.toks) || p.toks[p.i] != "]" {
		if p.i < len(p.toks) {
			return node{}, fmt.Errorf("unexpected %q inside [ ... ]", p.toks[p.i])
		}
		return node{}, errors.New(`unclosed "["`)
	}
	p.i++
	if len(inner) == 0 {
		return node{}, errors.New("empty [ ]")
	}
	if len(inner) == 1 && inner[0].kind == litNode && inner[0].text == "args" {
		return node{kind: restNode}, nil
	}
	return node{kind: optNode, alts: [][]node{inner}}, nil
}

// parsePlaceholder parses "<name>" or "<name!a|b>".
func parsePlaceholder(tok string) (node, error) {
	body := strings.TrimSuffix(strings.TrimPrefix(tok, "<"), ">")
	name, except, hasExcept := strings.Cut(body, "!")
	if !placeholder().MatchString(name) {
		return node{}, fmt.Errorf("bad placeholder %q: want <name> with a letter first, then letters, digits, _ or -", tok)
	}
	n := node{kind: wordNode, text: name}
	if hasExcept {
		for _, e := range strings.Split(except, "|") {
			if e == "" || strings.ContainsAny(e, " \t<>") {
				return node{}, fmt.Errorf("bad exclusion list in %q: want <name!word|word>", tok)
			}
			n.except = append(n.except, e)
		}
	}
	return n, nil
}

// checkTrailing makes sure "..." only ends a pattern (possibly inside a
// final group), so that matching never needs to guess how much it takes.
func checkTrailing(seq []node, atEnd bool) error {
	for i, n := range seq {
		last := atEnd && i == len(seq)-1
		switch n.kind {
		case restNode:
			if !last {
				return errors.New(`"..." and "[args]" may only end a pattern`)
			}
		case optNode, altNode:
			for _, alt := range n.alts {
				if err := checkTrailing(alt, last); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkDenied refuses patterns whose literal words are denied: such a
// pattern could never let a command through.
func (p *pattern) checkDenied(denied map[string]string) error {
	var err error
	var walk func([]node)
	walk = func(seq []node) {
		for _, n := range seq {
			switch n.kind {
			case litNode:
				if hits := deniedIn(n.text, denied); len(hits) > 0 && err == nil {
					err = fmt.Errorf("%q is a denied word, so this prefix could never match; add it to allowWords", hits[0].word)
				}
			case optNode, altNode:
				for _, alt := range n.alts {
					walk(alt)
				}
			}
		}
	}
	walk(p.seq)
	return err
}

// display renders the pattern for messages, without exclusion lists.
func (p *pattern) display() string {
	return renderSeq(p.seq)
}

func renderSeq(seq []node) string {
	parts := make([]string, len(seq))
	for i, n := range seq {
		switch n.kind {
		case litNode:
			parts[i] = n.text
		case wordNode:
			parts[i] = "<" + n.text + ">"
		case optNode:
			parts[i] = "[" + renderSeq(n.alts[0]) + "]"
		case altNode:
			alts := make([]string, len(n.alts))
			for j, a := range n.alts {
				alts[j] = renderSeq(a)
			}
			parts[i] = "(" + strings.Join(alts, "|") + ")"
		case restNode:
			parts[i] = "..."
		}
	}
	return strings.Join(parts, " ")
}
