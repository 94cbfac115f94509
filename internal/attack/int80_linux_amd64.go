package main

// int80getpid returns getpid() made through int $0x80, or -errno.
func int80getpid() int32
