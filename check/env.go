package check

import (
	"fmt"
	"slices"
	"strings"
)

// deniedEnvKeys are environment variables a task may not set: they change
// which programs run or inject code into them. Compared case-insensitively;
// every key starting with DYLD_ is refused too.
var deniedEnvKeys = []string{"PATH", "PATHEXT", "NODE_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH"}

// deniedEnvPrefix refuses the macOS dynamic loader's variables.
const deniedEnvPrefix = "DYLD_"

var envName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnv checks the environment a task asks for. Keys must be valid
// variable names and must not be PATH, PATHEXT, NODE_OPTIONS, LD_PRELOAD,
// LD_LIBRARY_PATH or DYLD_* (any case); values must not contain NUL.
// Values are passed literally: "${VAR}" is not expanded and .env files are
// not loaded, so values are not otherwise checked. Findings are sorted by
// key and have Pos -1.
func CheckEnv(env map[string]string) []Finding {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Finding
	bad := func(k, msg string) {
		out = append(out, Finding{Rule: RuleEnv, Token: shorten(k), Pos: -1, Message: msg})
	}
	for _, k := range keys {
		upper := strings.ToUpper(k)
		switch {
		case !envName().MatchString(k):
			bad(k, fmt.Sprintf("%q is not a valid variable name: use letters, digits and '_', not starting with a digit", k))
		case slices.Contains(deniedEnvKeys, upper) || strings.HasPrefix(upper, deniedEnvPrefix):
			bad(k, fmt.Sprintf("setting %s is not allowed: it changes which programs run or what they load", k))
		case strings.ContainsRune(env[k], 0):
			bad(k, fmt.Sprintf("the value of %s contains a NUL byte", k))
		}
	}
	return out
}
