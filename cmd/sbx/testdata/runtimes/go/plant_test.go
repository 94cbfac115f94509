package plant

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestArithmetic(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("1+1")
	}
}

// proxyGet asks the HTTP proxy in HTTP_PROXY for u; it returns the status
// line.
func proxyGet(t *testing.T, u string) string {
	p, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target, _ := url.Parse(u)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u, target.Host)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

func TestPlantedRefusal(t *testing.T) {
	switch os.Getenv("SBX_PLANT") {
	case "read":
		if _, err := os.ReadFile(os.Getenv("SBX_PLANT_PATH")); err == nil {
			t.Fatal("the denied file was read")
		}
	case "net":
		if line := proxyGet(t, os.Getenv("SBX_PLANT_URL")); !strings.Contains(line, " 403 ") {
			t.Fatalf("proxy answered %q", line)
		}
	case "unshare":
		if err := syscall.Unshare(syscall.CLONE_NEWUSER); err == nil {
			t.Fatal("unshare(CLONE_NEWUSER) succeeded")
		}
	}
}
