//go:build !amd64 && !arm64

package seccomp

// No programs are generated for this architecture yet: go generate
// ./seccomp on it writes filters_GOARCH.go. Until then Compile fails and
// sbx refuses to run.
const generatedWith = "none"

var generated []generatedProgram
