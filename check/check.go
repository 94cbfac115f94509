package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Finding is one reason a command, environment, working directory or
// confirmation string is refused.
type Finding struct {
	// Rule names the rule that refused, e.g. "metachars"; see the
	// package documentation for the list.
	Rule string `json:"rule"`
	// Token is the offending text as written (shortened when long);
	// empty when the finding is about the command as a whole.
	Token string `json:"token"`
	// Pos is the byte offset of Token in the command string, counting
	// from 0, or -1 for findings that are not about the command string
	// (env, cwd).
	Pos int `json:"position"`
	// Message explains the refusal in one line.
	Message string `json:"message"`
}

// String formats the finding as one line: "rule at N: message".
func (f Finding) String() string {
	if f.Pos < 0 {
		return f.Rule + ": " + f.Message
	}
	return fmt.Sprintf("%s at %d: %s", f.Rule, f.Pos, f.Message)
}

// metachars are the characters the metachars rule refuses.
const metachars = ";&|<>$()`\n\r"

// Check vets a command string against every rule switched on in c and
// returns the findings, ordered by rule and then position; none means the
// command is acceptable. root is the directory the command will run in,
// which paths must not leave ("" means the working directory). Check never
// panics and does not run anything; it only reads the file system to
// resolve paths.
func (c Config) Check(root, command string) []Finding {
	c = c.orDefault()
	var out []Finding
	if c.rules[RuleLength] {
		out = append(out, c.checkLength(command)...)
	}
	if c.rules[RuleCharset] {
		out = append(out, c.checkCharset(command)...)
	}
	if c.rules[RuleMetachars] {
		out = append(out, checkMetachars(command)...)
	}
	if !c.rules[RuleStructure] && !c.rules[RulePrefix] && !c.rules[RuleDeniedWords] && !c.rules[RulePaths] {
		sortFindings(out)
		return out
	}
	s := parseScript(command)
	if c.rules[RuleStructure] {
		out = append(out, s.structure()...)
	}
	if c.rules[RulePrefix] {
		out = append(out, c.checkPrefix(s)...)
	}
	if c.rules[RuleDeniedWords] {
		out = append(out, c.checkDenied(s)...)
	}
	if c.rules[RulePaths] {
		out = append(out, checkPaths(root, s)...)
	}
	sortFindings(out)
	return out
}

// sortFindings orders findings by rule, in the order of commandRules,
// then by position.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if c := cmp.Compare(slices.Index(commandRules, a.Rule), slices.Index(commandRules, b.Rule)); c != 0 {
			return c
		}
		return cmp.Compare(a.Pos, b.Pos)
	})
}

// checkLength refuses commands longer than the limit after trimming
// surrounding white space. The finding points at the first character
// past the limit.
func (c Config) checkLength(command string) []Finding {
	lead := len(command) - len(strings.TrimLeftFunc(command, unicode.IsSpace))
	trimmed := strings.TrimSpace(command)
	n := utf8.RuneCountInString(trimmed)
	if n <= c.maxLength {
		return nil
	}
	pos, count := lead, 0
	for i := range trimmed {
		if count == c.maxLength {
			pos = lead + i
			break
		}
		count++
	}
	return []Finding{{Rule: RuleLength, Pos: pos,
		Message: fmt.Sprintf("the command is %d characters long; at most %d are allowed", n, c.maxLength)}}
}

// checkCharset refuses commands that do not match the character-set
// pattern, naming each offending character once. Every character of
// the command counts, surrounding white space included.
func (c Config) checkCharset(command string) []Finding {
	if c.charset.MatchString(command) {
		return nil
	}
	if command == "" {
		return []Finding{{Rule: RuleCharset, Pos: 0, Message: "the command is empty"}}
	}
	var out []Finding
	seen := make(map[rune]bool)
	for i, r := range command {
		if seen[r] {
			continue
		}
		seen[r] = true
		_, size := utf8.DecodeRuneInString(command[i:])
		tok := command[i : i+size]
		if !c.charset.MatchString(tok) {
			out = append(out, Finding{Rule: RuleCharset, Token: tok, Pos: i,
				Message: fmt.Sprintf("the character %s is not in the allowed set", describeRune(r, tok))})
		}
	}
	if len(out) == 0 {
		out = append(out, Finding{Rule: RuleCharset, Token: shorten(command), Pos: 0,
			Message: "the command does not match the allowed character set " + c.charsetSrc})
	}
	return out
}

// describeRune names a character for messages: quoted, with its code
// point when it is not plain ASCII.
func describeRune(r rune, tok string) string {
	if r == utf8.RuneError && len(tok) == 1 {
		return fmt.Sprintf("byte 0x%02X (invalid UTF-8)", tok[0])
	}
	if r < utf8.RuneSelf && unicode.IsPrint(r) {
		return fmt.Sprintf("%q", r)
	}
	return fmt.Sprintf("%q (%U)", r, r)
}

// checkMetachars refuses shell metacharacters, naming each once.
func checkMetachars(command string) []Finding {
	var out []Finding
	var seen [128]bool
	for i := 0; i < len(command); i++ {
		b := command[i]
		if b >= 128 || seen[b] || strings.IndexByte(metachars, b) < 0 {
			continue
		}
		seen[b] = true
		out = append(out, Finding{Rule: RuleMetachars, Token: command[i : i+1], Pos: i,
			Message: fmt.Sprintf("the shell metacharacter %q is not allowed", b)})
	}
	return out
}

// checkPrefix requires the command to be one simple command whose words
// match an allowed prefix pattern.
func (c Config) checkPrefix(s script) []Finding {
	argv, pos, why := s.simpleArgv()
	if why != "" {
		return []Finding{{Rule: RulePrefix, Pos: pos,
			Message: "cannot match the allowed prefixes: " + why}}
	}
	for _, p := range c.prefixes {
		if p.match(argv) {
			return nil
		}
	}
	tok := argv[0]
	if len(argv) > 1 {
		tok += " " + argv[1]
	}
	allowed := make([]string, len(c.prefixes))
	for i, p := range c.prefixes {
		allowed[i] = p.display()
	}
	return []Finding{{Rule: RulePrefix, Token: shorten(tok), Pos: pos,
		Message: fmt.Sprintf("%q does not match an allowed prefix; allowed: %s", shorten(tok), strings.Join(allowed, "; "))}}
}

// checkDenied finds denied words in the text as written and in every
// parsed word after quote removal, so that g"i"t and g\it trip "git" too.
func (c Config) checkDenied(s script) []Finding {
	var out []Finding
	raw := deniedIn(s.src, c.denied)
	for _, h := range raw {
		out = append(out, Finding{Rule: RuleDeniedWords, Token: h.text, Pos: h.off,
			Message: fmt.Sprintf("%q is a denied executable (%s list)", h.text, h.list)})
	}
	for _, sw := range s.words() {
		val, _, _ := literalValue(sw.w)
		for _, h := range deniedIn(val, c.denied) {
			if foundWithin(raw, h.word, sw.pos, sw.end) {
				continue
			}
			out = append(out, Finding{Rule: RuleDeniedWords, Token: shorten(sw.raw), Pos: sw.pos,
				Message: fmt.Sprintf("%q becomes %q after quote removal, a denied executable (%s list)", shorten(sw.raw), h.text, h.list)})
		}
	}
	return out
}

// foundWithin reports whether word was already found in [start, end).
func foundWithin(hits []deniedHit, word string, start, end int) bool {
	for _, h := range hits {
		if h.word == word && h.off >= start && h.off < end {
			return true
		}
	}
	return false
}
