//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// dial NETWORK ADDR: connect (tcp, tcp6, udp, udp6) to ADDR and send one
// line; for TCP also read one line back. Prints "dial NETWORK ADDR: OK
// reply" or the errno. A UDP send "succeeding" only means the datagram
// left the socket: the test checks its own listener received nothing.
func dial(network, addr string) {
	name := "dial " + network + " " + addr
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		report(name, err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(c, "probe from the sandbox\n"); err != nil {
		report(name, err)
		return
	}
	if strings.HasPrefix(network, "udp") {
		report(name, nil, "sent")
		return
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	report(name, err, strings.TrimSpace(line))
}

// serve NETWORK ADDR: listen, print "listening", answer one connection
// with "hello from inside", exit.
func serve(network, addr string) {
	l, err := net.Listen(network, addr)
	if err != nil {
		report("listen "+addr, err)
		return
	}
	defer l.Close()
	fmt.Println("listening")
	os.Stdout.Sync()
	c, err := l.Accept()
	if err != nil {
		report("accept", err)
		return
	}
	fmt.Fprintln(c, "hello from inside")
	c.Close()
	report("served", nil)
}

// unix PATH...: connect to each Unix socket path, send a line, read one.
func dialUnix(paths []string) {
	for _, p := range paths {
		name := "unix " + p
		c, err := net.DialTimeout("unix", p, 3*time.Second)
		if err != nil {
			report(name, err)
			continue
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintln(c, "probe from the sandbox")
		line, err := bufio.NewReader(c).ReadString('\n')
		report(name, err, strings.TrimSpace(line))
		c.Close()
	}
}
