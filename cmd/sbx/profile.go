package main

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/sandbox"
)

func printProfile(p *policy.Policy, stdout, stderr io.Writer) int {
	prof, err := darwin.Profile(sandbox.DarwinInput(p, nil))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprint(stdout, prof)
	return 0
}
