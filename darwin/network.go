package darwin

import "strconv"

// network writes the network section: everything denied, then the loopback
// proxy ports, local binding and the listed Unix sockets re-allowed.
func (w *writer) network(in Input, ports []int, sockets []entry) {
	w.section("Network: nothing but the proxy ports on loopback")
	w.line("(deny network* " + w.message() + ")")
	filters := make([]string, 0, len(ports))
	for _, p := range ports {
		filters = append(filters, "(remote ip "+w.q("localhost:"+strconv.Itoa(p))+")")
	}
	w.rule("allow", "network-outbound", filters)

	if in.AllowLocalBinding {
		// Bind and accept on loopback only. No outbound rule: a
		// (local ip ...) outbound filter matches every connect() (srt
		// #131/#225), and (remote ip "localhost:*") would reach every
		// service listening on the host's loopback.
		w.section("allowLocalBinding: listen on loopback (no outbound)")
		w.line(`(allow network-bind (local ip "localhost:*"))`)
		w.line(`(allow network-inbound (local ip "localhost:*"))`)
	}

	switch {
	case in.AllowAllUnixSockets:
		w.section("allowAllUnixSockets")
		w.line("(allow system-socket (socket-domain AF_UNIX))")
		w.line(`(allow network-bind (local unix-socket (subpath "/")))`)
		w.line(`(allow network-outbound (remote unix-socket (subpath "/")))`)
	case len(sockets) > 0:
		w.section("allowUnixSockets: create, bind and connect only these")
		w.line("(allow system-socket (socket-domain AF_UNIX))")
		local := make([]string, 0, len(sockets))
		remote := make([]string, 0, len(sockets))
		for _, s := range sockets {
			f := w.socketFilter(s)
			local = append(local, "(local unix-socket "+f+")")
			remote = append(remote, "(remote unix-socket "+f+")")
		}
		w.rule("allow", "network-bind", local)
		w.rule("allow", "network-outbound", remote)
	}
}

// socketFilter matches a socket path, or every socket in a directory.
func (w *writer) socketFilter(e entry) string {
	if e.glob {
		return "(path-regex " + w.q(e.subtreeRegex()) + ")"
	}
	return w.subpath(e.path)
}
