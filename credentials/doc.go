// Package credentials keeps secret values out of the sandbox.
//
// The sandboxed command never sees a masked secret: it sees a SENTINEL, an
// unguessable per-run stand-in such as
//
//	sbxsecret_3f9c0a6d2b7e41c8a5d09e6f1b2c3d4e
//
// in place of the real value (in an environment variable or in a file's text).
// The only network exit of the sandbox is sbx's proxy; when the proxy sees an
// outgoing request (over plain HTTP, or over TLS it terminated) it hands the
// request to an Injector, which puts the real value back in place of the
// sentinel, but only towards hosts allowed to receive that secret. A sentinel
// headed anywhere else is left in place and reported as a Leak.
//
// The package owns:
//
//   - making sentinels and masked values (Mask, MaskFile), following srt's
//     settings credentials.envVars[] / credentials.files[] entries with
//     mode "mask": extract (capture group 1 of a regular expression),
//     onExtractNoMatch (warn, deny, error), decode "jwt" and maskClaims, and
//     injectHosts (Secret.Hosts);
//   - putting real values back into requests (Injector.Rewrite), honouring
//     injectHosts (or the caller's default hosts) and srt's
//     credentials.allowPlaintextInject;
//   - re-signing AWS SigV4 requests signed with a masked key pair
//     (ResignSigV4), only for a request dated within MaxSigV4Skew of now
//     whose credential scope names the same day;
//   - never printing a real value: Secret and Injector redact it in every fmt
//     verb and in JSON, and no error or note of this package contains one.
//
// It does not own reading settings (the caller validates entries and turns
// them into a Spec), mode "deny" (unsetting variables, denying reads), the
// host pattern syntax (the caller passes its proxy's matcher to NewInjector),
// nor TLS termination.
//
// Example:
//
//	spec := credentials.Spec{Name: "GITHUB_TOKEN", Hosts: []string{"api.github.com"}}
//	masked, secrets, removed, note, err := credentials.Mask(os.Getenv("GITHUB_TOKEN"), spec)
//	if err != nil {
//		return err // never contains the value
//	}
//	if note != "" {
//		log.Print(note) // never contains the value
//	}
//	if !removed {
//		env = append(env, "GITHUB_TOKEN="+masked) // the sandbox sees the sentinel
//	}
//	inj := credentials.NewInjector(secrets, allowedDomains, netproxy.MatchAny, false, 0)
//
//	// In the proxy, for every request it can read:
//	for _, l := range inj.Rewrite(req, host, port, tlsTerminated) {
//		log.Printf("secret %s not sent to %s:%d (%s): %s", l.Name, l.Host, l.Port, l.Where, l.Reason)
//	}
package credentials
