package check

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// script is a command string parsed with mvdan.cc/sh (Bash dialect, the
// widest one, so that every construct any shell would see is recognised).
type script struct {
	src    string
	file   *syntax.File // nil when the string does not parse
	err    error        // parse error
	errPos int          // byte offset of the parse error
}

// parseScript parses src. The parser reads untrusted input; a panic in it
// is turned into a parse error, which every rule treats as a refusal.
func parseScript(src string) (s script) {
	s.src = src
	defer func() {
		if r := recover(); r != nil {
			s.file, s.err, s.errPos = nil, fmt.Errorf("shell parser failed: %v", r), 0
		}
	}()
	p := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		s.err = err
		var pe syntax.ParseError
		var le syntax.LangError
		switch {
		case errors.As(err, &pe):
			s.err, s.errPos = errors.New(pe.Text), offset(src, pe.Pos)
		case errors.As(err, &le):
			s.err, s.errPos = fmt.Errorf("%s is not supported", le.Feature), offset(src, le.Pos)
		}
		return s
	}
	s.file = f
	return s
}

// offset converts a parser position into a byte offset within src.
func offset(src string, p syntax.Pos) int {
	if !p.IsValid() {
		return 0
	}
	return min(int(p.Offset()), len(src))
}

// text returns the source text of a node, shortened for messages.
func (s script) text(n syntax.Node) string {
	start, end := offset(s.src, n.Pos()), offset(s.src, n.End())
	if end < start {
		end = start
	}
	return shorten(s.src[start:end])
}

// shorten cuts long tokens for findings.
func shorten(t string) string {
	const max = 60
	if len(t) <= max {
		return t
	}
	cut := max
	for cut > 0 && !isRuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// shellWord is one word of the parsed command, anywhere in the tree.
type shellWord struct {
	w        *syntax.Word
	pos, end int
	raw      string // source text
	hdoc     bool   // a here-document body, not an argument
}

// words lists every word in the tree, in source order.
func (s script) words() []shellWord {
	if s.file == nil {
		return nil
	}
	var out []shellWord
	hdocs := map[*syntax.Word]bool{}
	syntax.Walk(s.file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			if n.Hdoc != nil {
				hdocs[n.Hdoc] = true
			}
		case *syntax.Word:
			if len(n.Parts) == 0 {
				return true
			}
			pos, end := offset(s.src, n.Pos()), offset(s.src, n.End())
			end = max(end, pos)
			out = append(out, shellWord{w: n, pos: pos, end: end, raw: s.src[pos:end], hdoc: hdocs[n]})
		}
		return true
	})
	return out
}

// literalValue returns what the shell would pass for w after quote
// removal, with the literal parts only; literal reports whether w has no
// expansions at all, so that the value is exact.
func literalValue(w *syntax.Word) (val string, literal, quoted bool) {
	var b strings.Builder
	literal = true
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			quoted = true
			b.WriteString(p.Value)
			literal = literal && !p.Dollar
		case *syntax.DblQuoted:
			quoted = true
			literal = literal && !p.Dollar
			for _, inner := range p.Parts {
				if l, ok := inner.(*syntax.Lit); ok {
					b.WriteString(unescape(l.Value, true))
				} else {
					literal = false
				}
			}
		default:
			literal = false
		}
	}
	return b.String(), literal, quoted
}

// unescape removes backslash quoting from a literal: outside double quotes
// a backslash quotes any character; inside, only $ ` " \ and newline.
// An escaped newline is a line continuation and disappears.
func unescape(s string, inDouble bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
		case !inDouble || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
		default:
			b.WriteByte(c)
			b.WriteByte(next)
		}
		i++
	}
	return b.String()
}

// simpleArgv returns the argument values of a command string that is
// exactly one simple command with literal words, or why it is not.
func (s script) simpleArgv() ([]string, int, string) {
	if s.file == nil {
		return nil, s.errPos, "the command does not parse"
	}
	if len(s.file.Stmts) != 1 {
		return nil, 0, "the string is not exactly one command"
	}
	st := s.file.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || st.Coprocess || st.Disown ||
		len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, offset(s.src, st.Pos()), "the string is not a single simple command"
	}
	argv := make([]string, len(call.Args))
	for i, w := range call.Args {
		v, literal, _ := literalValue(w)
		if !literal {
			return nil, offset(s.src, w.Pos()), fmt.Sprintf("word %q is expanded by the shell", s.text(w))
		}
		argv[i] = v
	}
	return argv, offset(s.src, call.Pos()), ""
}

// structure reports every shell construct beyond one simple command with
// literal words.
func (s script) structure() []Finding {
	if s.file == nil {
		tok := ""
		if s.errPos < len(s.src) {
			_, size := utf8.DecodeRuneInString(s.src[s.errPos:])
			tok = s.src[s.errPos : s.errPos+size]
		}
		return []Finding{{Rule: RuleStructure, Token: tok, Pos: s.errPos,
			Message: fmt.Sprintf("not a valid shell command: %v", s.err)}}
	}
	var out []Finding
	add := func(n syntax.Node, at syntax.Pos, token, what string) {
		if token == "" {
			token = s.text(n)
		}
		out = append(out, Finding{Rule: RuleStructure, Token: token, Pos: offset(s.src, at), Message: what + " is not allowed"})
	}
	switch len(s.file.Stmts) {
	case 0:
		out = append(out, Finding{Rule: RuleStructure, Pos: 0, Message: "no command given"})
	case 1:
	default:
		for _, st := range s.file.Stmts[1:] {
			add(st, st.Pos(), "", "a second command")
		}
	}
	syntax.Walk(s.file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			s.stmtFlags(n, add)
		case *syntax.Word:
			s.unquotedExpansions(n, add)
		case *syntax.Comment:
			add(n, n.Pos(), "#", "a comment")
		case *syntax.Redirect:
			add(n, n.OpPos, n.Op.String(), redirectName(n.Op))
		case *syntax.Assign:
			add(n, n.Pos(), "", "a variable assignment")
		case *syntax.BinaryCmd:
			add(n, n.OpPos, n.Op.String(), binaryName(n.Op.String()))
		case *syntax.SglQuoted:
			if n.Dollar {
				add(n, n.Pos(), "", "$'...' quoting")
			}
		case *syntax.DblQuoted:
			if n.Dollar {
				add(n, n.Pos(), "", `$"..." quoting`)
			}
		case *syntax.CallExpr, *syntax.Lit, *syntax.File:
		default:
			if what := constructName(n); what != "" {
				add(n, n.Pos(), "", what)
			}
		}
		return true
	})
	return out
}

// stmtFlags reports negation, backgrounding and separators on a statement.
func (s script) stmtFlags(st *syntax.Stmt, add func(syntax.Node, syntax.Pos, string, string)) {
	if st.Negated {
		add(st, st.Pos(), "!", "negation with !")
	}
	switch {
	case st.Background:
		add(st, st.Semicolon, "&", "running in the background with &")
	case st.Coprocess || st.Disown:
		add(st, st.Semicolon, "", "a coprocess or disowned job")
	case st.Semicolon.IsValid():
		add(st, st.Semicolon, ";", "the command separator ;")
	}
}

// unquotedExpansions reports globs, brace expansion and tilde expansion
// in the unquoted literal parts of a word: they make the arguments differ
// from the text.
func (s script) unquotedExpansions(w *syntax.Word, add func(syntax.Node, syntax.Pos, string, string)) {
	for i, part := range w.Parts {
		lit, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		v := lit.Value
		braceOpen := false
		for j := 0; j < len(v); j++ {
			c := v[j]
			if c == '\\' {
				j++
				continue
			}
			switch {
			case c == '*' || c == '?' || c == '[':
				add(lit, lit.Pos(), string(c), fmt.Sprintf("the glob character %q", c))
				return
			case c == '{':
				braceOpen = true
			case c == '}' && braceOpen:
				add(lit, lit.Pos(), "{", "brace expansion")
				return
			case c == '~' && (j == 0 && i == 0 || j > 0 && (v[j-1] == '=' || v[j-1] == ':')):
				add(lit, lit.Pos(), "~", "tilde expansion")
				return
			}
		}
	}
}

func redirectName(op syntax.RedirOperator) string {
	switch op {
	case syntax.Hdoc, syntax.DashHdoc:
		return "a here-document"
	case syntax.WordHdoc:
		return "a here-string"
	}
	return "the redirection " + op.String()
}

func binaryName(op string) string {
	switch op {
	case "|", "|&":
		return "a pipe " + op
	}
	return "chaining with " + op
}

// constructName names the remaining node types that have no place in a
// single simple command; "" for nodes that are only parts of those.
func constructName(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.Subshell:
		return "a subshell ( ... )"
	case *syntax.Block:
		return "a command group { ... }"
	case *syntax.IfClause:
		return "an if statement"
	case *syntax.WhileClause:
		return "a while or until loop"
	case *syntax.ForClause:
		return "a for loop"
	case *syntax.CaseClause:
		return "a case statement"
	case *syntax.FuncDecl:
		return "a function definition"
	case *syntax.ArithmCmd:
		return "an arithmetic command (( ))"
	case *syntax.TestClause:
		return "a test [[ ]]"
	case *syntax.DeclClause:
		return "the builtin " + n.Variant.Value
	case *syntax.LetClause:
		return "the builtin let"
	case *syntax.TimeClause:
		return "the keyword time"
	case *syntax.CoprocClause:
		return "coproc"
	case *syntax.TestDecl:
		return "a test declaration"
	case *syntax.ParamExp:
		return "parameter expansion"
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ArithmExp:
		return "arithmetic expansion"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ExtGlob:
		return "an extended glob"
	case *syntax.BraceExp:
		return "brace expansion"
	case *syntax.ArrayExpr:
		return "an array"
	}
	return ""
}
