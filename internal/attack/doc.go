// The Go runtime must not open descriptors of its own (the cgroup files it
// reads for GOMAXPROCS): the fds probe lists what the process inherited.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command attack is sbx's escape prober, used only by the integration
// tests in cmd/sbx (attack_test.go). Each invocation runs one named probe:
//
//	attack PROBE [ARG...]
//
// and prints one line per attempted operation,
//
//	NAME: RESULT [DETAIL]
//
// where RESULT is OK or the errno's name (EPERM, ENOSYS, EROFS, ...), so a
// test can assert exact errnos. The exit status is 0 whenever the probe
// ran (whatever the kernel answered), 2 for a usage error and 1 when the
// probe could not set itself up. A probe that makes the kernel kill it
// (int80, x32 under a filter that kills) prints "NAME: calling" first and
// then dies, so the caller can tell "killed at the call" from "never ran".
//
// Every probe is written to be harmless if the sandbox around it fails:
// ptrace only seizes and then detaches; process_vm_writev writes one byte
// to an unmapped address; SIGTERM goes only to a child of the probe's own
// or a process named "sbx";
// files are opened for writing without truncation and renames are undone;
// mounts go only over paths the caller passes and are undone; TIOCSTI
// injects one printable byte and no newline; nothing touches the network
// beyond creating sockets and connecting to a caller-named abstract socket
// or address (netnone sends only from a namespace whose sole interface is
// lo); the capture probes name only the device sbx0 (which exists
// only inside an sbx sandbox) or lo in a user namespace of their own, and
// a TUN device they make is a new one, gone when they close it.
//
// Probes (see run in main_linux.go for the exact lines each prints):
//
//	noop                       exit 0
//	sleep SECONDS              sleep (a child to probe)
//	tiocsti                    TIOCSCTTY on fd 0, then TIOCSTI "Z" and
//	                           TIOCSTI "Y" with request bits above 32 set
//	int80                      getpid through the i386 int $0x80 gate
//	x32                        getpid with the x32 bit (0x40000000)
//	io_uring                   io_uring_setup
//	userns                     unshare/clone/clone3 with CLONE_NEWUSER
//	mount DIR MASKED           tmpfs over DIR, bind DIR over MASKED, umount MASKED
//	ptrace [PID...]            seize, process_vm_readv/writev, /proc/PID/mem,
//	                           pidfd_getfd, signals, against a child of its
//	                           own and each PID (SIGTERM only to one named sbx)
//	sigio child|PID            SIGTERM sent by the kernel (F_SETOWN + F_SETSIG
//	                           on a pipe), to a child or to a PID named sbx
//	openw PATH...              open(PATH, O_WRONLY) (no truncation)
//	setid DIR                  chmod, fchmod, fchmodat, fchmodat2, open
//	                           O_CREAT / O_TMPFILE, creat, mkdir, mknod and
//	                           openat2 with set-id modes, on files in DIR;
//	                           each line ends with the mode the file has
//	tamper PATH SPARE          open O_WRONLY, chmod, rename away and back,
//	                           rename SPARE over PATH (undone)
//	creds                      real/effective/saved uid and capability sets
//	watchsuid BIN [ARG...]     run BIN (stdin a silent pipe) and report the
//	                           uids and CapEff it ran with
//	sockets                    socket()/socketpair() for many families
//	fds [N...]                 list open descriptors, then read each N
//	procfds PID                list /proc/PID/fd, readlink and open each entry
//	cwd                        working directory and whether it is inside "/"
//	symlink LINK TARGET        create a symlink
//	create PATH                open(PATH, O_WRONLY|O_CREAT|O_TRUNC), write a line
//	mkdir PATH                 mkdir
//	read PATH                  read a file
//	rename OLD NEW             rename (undone when it worked)
//	abstract NAME              connect to the abstract Unix socket "@NAME"
//	abstract-self NAME         listen on "@NAME" and connect to it
//	capdev DEV                 SIOCSIFFLAGS (down), SIOCSIFADDR, SIOCSIFMTU,
//	                           SIOCDELRT/SIOCADDRT and rtnetlink route, link
//	                           and address requests on DEV: only sbx0, or lo
//	                           in a user namespace of its own (capture_linux.go)
//	tun DIR                    open /dev/net/tun, mknod a TUN node in DIR,
//	                           TUNSETIFF a new device "sbxatk0" on each
//	tunfds                     every visible descriptor that points at TUN
//	netns                      a child in a new user+net namespace: its
//	                           interfaces, and a dial with no route
//	bindover SRC DST           bind-mount SRC over DST (undone)
//	filtered PROG [ARG...]     exec PROG under a seccomp filter that allows
//	                           everything (what "Seccomp: 2" looks like to
//	                           sbx doctor, as inside another sandbox)
//	netnone ADDR NAME          TCP connect to ADDR:443, UDP connect to
//	                           ADDR:53, UDP sendto of a DNS query for NAME
//	                           to ADDR:53, the same to 127.0.0.1; only in a
//	                           network namespace with lo alone (net_linux.go)
package main
