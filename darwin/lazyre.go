package darwin

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use: package initialisation runs in
// every sbx process (the sandbox's init too), and compiling every pattern
// there costs start-up time on runs that never use them.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
