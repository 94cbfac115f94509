package seccomp

// Config is what the filter depends on. The zero value is the strictest.
type Config struct {
	// AllowUnixSockets lets the command create AF_UNIX sockets (the mount
	// view and Landlock still decide which ones it can reach).
	AllowUnixSockets bool `json:"allowUnixSockets"`
	// AllowDatagram lets the command create SOCK_DGRAM inet sockets. In the
	// full sandbox the network namespace has only loopback, so this is on;
	// the weaker mode has the host's network and turns it off.
	AllowDatagram bool `json:"allowDatagram"`
}

// Program is a compiled classic-BPF filter, as the kernel reads it
// (struct sock_filter, 8 bytes an instruction, native byte order).
type Program []byte
