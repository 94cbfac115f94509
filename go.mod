module github.com/sbx-sh/sbx

go 1.26.8

require (
	github.com/seccomp/libseccomp-golang v0.11.1
	golang.org/x/net v0.50.0
	golang.org/x/sys v0.49.0
	mvdan.cc/sh/v3 v3.14.1
)
