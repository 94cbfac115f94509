//go:build linux && !amd64

package main

import "golang.org/x/sys/unix"

// int80getpid: the i386 gate exists on amd64 only.
func int80getpid() int32 { return -int32(unix.ENOSYS) }
