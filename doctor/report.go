package doctor

// Report is what `sbx doctor` prints: what this kernel supports, the
// mode sbx will use and, when that is not the full mode, why and how to
// fix it.
type Report struct {
	Kernel string `json:"kernel"`
	UserNS struct {
		Available bool `json:"available"`
		// Reason is how starting a process in new user, mount, pid and
		// network namespaces failed; Diagnosis says why and what fixes it.
		Reason string `json:"reason,omitempty"`
	} `json:"userNamespaces"`
	// Proc is whether that process could mount a fresh /proc, as every
	// full-mode run does (container runtimes that hide parts of /proc
	// make it fail).
	Proc struct {
		Mountable bool   `json:"mountable"`
		Reason    string `json:"reason,omitempty"`
	} `json:"freshProc"`
	// Discard is whether an overlay can be mounted in the sandbox's user
	// namespace (--discard-writes, --undeclared-writes discard).
	Discard struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason,omitempty"`
	} `json:"discardOverlays"`
	Landlock struct {
		ABI int `json:"abi"`
	} `json:"landlock"`
	Seccomp struct {
		Available bool   `json:"available"`
		Library   string `json:"library"`
	} `json:"seccomp"`
	// Capture is whether this user can open /dev/net/tun read-write, as
	// the capture (network.capture) needs; without it filtered runs go
	// on without the capture.
	Capture struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason,omitempty"`
	} `json:"capture"`
	// Mode is "full" (namespaces + Landlock + seccomp), "weaker-only"
	// (user namespaces unavailable: only --weaker-nested runs) or
	// "unavailable".
	Mode string `json:"mode"`
	// Diagnosis is the one reason sbx cannot run in the full mode (ID
	// "ok" when it can) and the fixes for it.
	Diagnosis Diagnosis `json:"diagnosis"`
}
