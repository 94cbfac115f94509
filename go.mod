module github.com/sbx-sh/sbx

go 1.26.8

require (
	github.com/seccomp/libseccomp-golang v0.11.1
	golang.org/x/net v0.52.0
	golang.org/x/sys v0.49.0
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/time v0.15.0 // indirect
)
