//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "attack: the probes are Linux-only")
	os.Exit(2)
}
