package capture

import (
	"net"

	"github.com/sbx-sh/sbx/netproxy"
	"golang.org/x/net/dns/dnsmessage"
)

// Policy is what capture asks of the proxy; *netproxy.Proxy is one.
type Policy interface {
	// DecideName: may the name be resolved at all (any port)?
	DecideName(name string) netproxy.Decision
	// VetCaptured decides a captured TCP connection to hostname:port
	// as a CONNECT to it, before the handshake completes; an error is a
	// refusal (already reported) or a failed lookup, answered by a reset.
	VetCaptured(hostname string, port int) (*netproxy.Captured, error)
	// ServeVetted serves the connection VetCaptured allowed, and closes
	// it.
	ServeVetted(c net.Conn, t *netproxy.Captured)
	// Report records a refusal decided here (a name, a datagram).
	Report(d netproxy.Denial)
}

// TTL of the synthetic answers, in seconds. The address of a name never
// changes within a run; the TTL only bounds how long a client caches an
// answer after --control-fd removed the name from the policy (its
// connections are refused either way).
const TTL = 60

// Resolver answers the sandbox's DNS queries from the policy and the
// address book; it never asks another resolver. See the package doc for
// what each query gets.
type Resolver struct {
	names *Names
	pol   Policy

	reported netproxy.OnceSet[string]
}

// NewResolver returns a resolver handing out names' addresses from names.
func NewResolver(names *Names, pol Policy) *Resolver {
	return &Resolver{names: names, pol: pol}
}

// Answer returns the response to one DNS query message, or nil when the
// message is not a query worth answering (garbage, a response).
func (r *Resolver) Answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return r.reply(h, nil, dnsmessage.RCodeFormatError, nil)
	}
	if h.OpCode != 0 {
		return r.reply(h, qs, dnsmessage.RCodeNotImplemented, nil)
	}
	if len(qs) != 1 || qs[0].Class != dnsmessage.ClassINET {
		return r.reply(h, qs, dnsmessage.RCodeFormatError, nil)
	}
	q := qs[0]
	name := canonicalName(q.Name.String())
	d := r.pol.DecideName(name)
	if !d.Allowed {
		r.reportOnce(name, d)
		return r.reply(h, qs, dnsmessage.RCodeNameError, nil)
	}
	switch q.Type {
	case dnsmessage.TypeA, dnsmessage.TypeAAAA:
		v4, v6, err := r.names.Assign(name)
		if err != nil {
			return r.reply(h, qs, dnsmessage.RCodeServerFailure, nil)
		}
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: TTL}
		var body dnsmessage.ResourceBody
		if q.Type == dnsmessage.TypeA {
			body = &dnsmessage.AResource{A: v4.As4()}
		} else {
			body = &dnsmessage.AAAAResource{AAAA: v6.As16()}
		}
		return r.reply(h, qs, dnsmessage.RCodeSuccess, &answer{rh, body})
	case dnsmessage.TypeHTTPS, dnsmessage.TypeSVCB:
		// The name exists and has no such record: browsers and curl fall
		// back to A/AAAA at once.
		return r.reply(h, qs, dnsmessage.RCodeSuccess, nil)
	default:
		// MX, TXT, SRV, PTR, CNAME, ANY...: sbx carries TCP to names and
		// has no data of these kinds to give.
		return r.reply(h, qs, dnsmessage.RCodeRefused, nil)
	}
}

type answer struct {
	h    dnsmessage.ResourceHeader
	body dnsmessage.ResourceBody
}

func (r *Resolver) reply(qh dnsmessage.Header, qs []dnsmessage.Question, rcode dnsmessage.RCode, ans *answer) []byte {
	h := dnsmessage.Header{ID: qh.ID, Response: true, OpCode: qh.OpCode, Authoritative: true,
		RecursionDesired: qh.RecursionDesired, RecursionAvailable: true, RCode: rcode}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil
	}
	for _, q := range qs {
		if err := b.Question(q); err != nil {
			return nil
		}
	}
	if ans != nil {
		if err := b.StartAnswers(); err != nil {
			return nil
		}
		var err error
		switch body := ans.body.(type) {
		case *dnsmessage.AResource:
			err = b.AResource(ans.h, *body)
		case *dnsmessage.AAAAResource:
			err = b.AAAAResource(ans.h, *body)
		}
		if err != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// reportOnce records a refused name once per run: a lookup asks A and
// AAAA, often twice over, and one refusal is one record.
func (r *Resolver) reportOnce(name string, d netproxy.Decision) {
	if !r.reported.First(name) {
		return
	}
	r.pol.Report(netproxy.Denial{Proto: netproxy.ProtoDNS, Host: truncate(name), Rule: d.Rule, Reason: d.Reason})
}

func truncate(s string) string {
	if len(s) > 256 {
		return s[:256]
	}
	return s
}
