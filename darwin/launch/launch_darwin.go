//go:build darwin

package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"

	"github.com/sbx-sh/sbx/darwin"
	"github.com/sbx-sh/sbx/netproxy"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// Launch runs the command under sandbox-exec with a profile generated
// from p (package darwin). There is no network namespace: in filtered
// mode the supervisor's proxy listens on two loopback ports of the host
// and the profile lets the command reach only those. Denials are read
// from the system log (log stream, filtered on the run's message tag)
// and recorded like Linux's. This runner is built and unit-tested on
// Linux but has not been run on a Mac.
func Launch(p *policy.Policy, stderr io.Writer, col *violations.Collector, ready func()) (int, error) {
	if len(p.Network.Publish) > 0 {
		return 125, errors.New("--publish: on macOS the command listens on the host's own loopback; use --allow-local-binding instead")
	}
	if p.Network.Mode == "host" {
		return 125, errors.New("--net host is not supported on macOS yet; use --allow-domain")
	}
	env := p.Process.Env
	if env == nil {
		env = []string{} // exec.Cmd would pass sbx's own environment on
	}
	var ports []int
	if p.Network.Mode == "filtered" {
		px, err := netproxy.New(netproxy.Config{
			Allowed: p.Network.AllowedDomains, Denied: p.Network.DeniedDomains,
			DeniedReasons: p.Network.DeniedDomainReasons, DeniedResolved: p.Network.DeniedResolvedAddresses,
			OnDeny: netproxy.Reporter(col),
		})
		if err != nil {
			return 125, fmt.Errorf("network settings: %w", err)
		}
		defer px.Close()
		var ls [2]net.Listener
		for i := range ls {
			if ls[i], err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
				return 125, fmt.Errorf("proxy listener: %w", err)
			}
			ports = append(ports, ls[i].Addr().(*net.TCPAddr).Port)
		}
		go func() { _ = px.ServeHTTP(ls[0]) }()
		go func() { _ = px.ServeSOCKS(ls[1]) }()
		env = netproxy.ClientEnv(env, netproxy.Client{
			HTTPPort: uint16(ports[0]), SOCKSPort: uint16(ports[1]),
			Allowed: p.Network.AllowedDomains, Self: p.Process.Self,
		})
	}
	in := Input(p, ports)
	prof, err := darwin.Profile(in)
	if err != nil {
		return 125, err
	}
	if ready != nil {
		ready()
	}
	stopLog := watchSystemLog(in.Tag, col, stderr)
	ctx := context.Background()
	if p.Process.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Process.Timeout)
		defer cancel()
	}
	code, err := darwin.Run(ctx, prof, p.Process.Argv, env, p.Process.Dir)
	stopLog()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(stderr, "sbx: timed out after %v; the sandbox was killed\n", p.Process.Timeout)
		return 124, nil
	case err != nil && code >= 125:
		fmt.Fprintf(stderr, "sbx: %v\n", err)
	}
	return code, nil
}

// watchSystemLog streams the run's denials from log(1) into col. The
// returned stop waits a moment for late lines (the log lags), then ends
// the stream.
func watchSystemLog(tag string, col *violations.Collector, stderr io.Writer) (stop func()) {
	if col == nil {
		return func() {}
	}
	cmd := exec.Command("/usr/bin/log", darwin.LogStreamArgs(tag)...)
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintf(stderr, "sbx: cannot read the system log (%v): file and other Seatbelt denials are not reported\n", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := darwin.ParseLogLine(tag, sc.Text()); ok {
				col.Add(seatbeltRecord(v))
			}
		}
	}()
	return func() {
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	}
}
