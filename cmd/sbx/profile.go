package main

import (
	"fmt"
	"io"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/darwin/launch"
	"github.com/sbx-sh/sbx/policy"
)

func printProfile(p *policy.Policy, stdout, stderr io.Writer) int {
	prof, err := darwin.Profile(launch.Input(p, nil))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprint(stdout, prof)
	return 0
}
