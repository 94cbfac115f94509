module github.com/sbx-sh/sbx

go 1.26.8

require (
	github.com/elazarl/goproxy v1.9.2 // indirect
	github.com/landlock-lsm/go-landlock v0.11.0 // indirect
	github.com/seccomp/libseccomp-golang v0.11.1 // indirect
	golang.org/x/net v0.50.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
