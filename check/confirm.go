package check

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Confirmation verbs for [CheckConfirm].
const (
	VerbAdd    = "add"
	VerbRemove = "remove"
)

// CheckConfirm verifies the confirmation string of a two-step add or
// remove flow. The verb is given by the caller, never guessed from the
// string: verb "add" requires confirm to be exactly "ADD <name>", verb
// "remove" exactly "REMOVE <name>" — upper-case verb, one space, the name
// byte for byte, nothing around. The error reports bad input (an unknown
// verb, or a name that is empty, has surrounding white space or control
// characters); the findings report a mismatch, with Pos the byte offset
// of the first difference.
func CheckConfirm(verb, name, confirm string) ([]Finding, error) {
	if verb != VerbAdd && verb != VerbRemove {
		return nil, fmt.Errorf("unknown verb %q: want %q or %q", verb, VerbAdd, VerbRemove)
	}
	if name == "" {
		return nil, errors.New("empty name")
	}
	if strings.TrimSpace(name) != name || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return nil, fmt.Errorf("name %q has surrounding white space or control characters", name)
	}
	want := strings.ToUpper(verb) + " " + name
	if confirm == want {
		return nil, nil
	}
	pos := 0
	for pos < len(want) && pos < len(confirm) && want[pos] == confirm[pos] {
		pos++
	}
	return []Finding{{Rule: RuleConfirm, Token: shorten(confirm), Pos: pos,
		Message: fmt.Sprintf("the confirmation must be exactly %q", want)}}, nil
}
