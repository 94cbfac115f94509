package sandbox

// Report is what `sbx doctor` prints: what this kernel supports and the
// mode sbx will use.
type Report struct {
	Kernel string `json:"kernel"`
	UserNS struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason,omitempty"`
	} `json:"userNamespaces"`
	Landlock struct {
		ABI int `json:"abi"`
	} `json:"landlock"`
	Seccomp struct {
		Available bool   `json:"available"`
		Library   string `json:"library"`
	} `json:"seccomp"`
	// Mode is "full" (namespaces + Landlock + seccomp), "weaker-only"
	// (user namespaces unavailable: only --weaker-nested runs) or
	// "unavailable".
	Mode string `json:"mode"`
}
