package sandbox

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/sbx-sh/sbx/credentials"
	"github.com/sbx-sh/sbx/netproxy"
	"github.com/sbx-sh/sbx/policy"
	"github.com/sbx-sh/sbx/violations"
)

// KindCredential is the violation kind of a sentinel sent where its real
// value may not go.
const KindCredential = "credential"

// maskSecrets applies credentials.envVars and credentials.files in mode
// mask: each real value (or extracted span) in the command's environment
// is replaced by a sentinel, and each masked file becomes a read-only
// copy with sentinels, bound over the original. The real values stay in
// the returned secrets, in the supervisor's memory only; nothing here
// ever prints one.
func maskSecrets(pl *Plan, p *policy.Policy) ([]credentials.Secret, []string, error) {
	c := p.Credentials
	if c == nil {
		return nil, nil, nil
	}
	var secrets []credentials.Secret
	var notes []string
	spec := func(r policy.CredentialRule, name string) credentials.Spec {
		s := credentials.Spec{Name: name, OnExtractNoMatch: r.OnExtractNoMatch, DecodeJWT: r.Decode == "jwt", MaskClaims: r.MaskClaims, Hosts: r.InjectHosts}
		if s.OnExtractNoMatch == "" {
			s.OnExtractNoMatch = "deny" // a value sbx cannot mask does not enter the sandbox
		}
		if r.Extract != "" {
			s.Extract = regexp.MustCompile(r.Extract) // checked when the settings were read
		}
		return s
	}
	for _, r := range c.EnvVars {
		if r.Mode != "mask" {
			continue
		}
		for _, h := range r.InjectHosts {
			if err := netproxy.ValidatePattern(h, false); err != nil {
				return nil, nil, fmt.Errorf("credentials.envVars %s injectHosts: %w", r.Name, err)
			}
		}
		for i, kv := range pl.Env {
			k, v, _ := strings.Cut(kv, "=")
			if k != r.Name {
				continue
			}
			masked, sec, removed, note, err := credentials.Mask(v, spec(r, r.Name))
			if err != nil {
				return nil, nil, fmt.Errorf("credentials.envVars %s: %w", r.Name, err)
			}
			if note != "" {
				notes = append(notes, "credentials.envVars "+r.Name+": "+note)
			}
			if removed {
				pl.Env = append(pl.Env[:i:i], pl.Env[i+1:]...)
			} else {
				pl.Env[i] = k + "=" + masked
			}
			secrets = append(secrets, sec...)
			break
		}
	}
	for _, r := range c.Files {
		if r.Mode != "mask" {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(r.Path, &st); err == nil && st.Nlink > 1 {
			// The copy covers one name; another hard link would show the
			// real contents.
			return nil, nil, fmt.Errorf("credentials.files %s has %d hard links, which the masked copy would not cover; keep one link, or use mode deny on each", r.Path, st.Nlink)
		}
		content, err := os.ReadFile(r.Path)
		if err != nil {
			if os.IsNotExist(err) {
				continue // nothing to mask
			}
			return nil, nil, fmt.Errorf("credentials.files %s: cannot read it to mask it: %v", r.Path, unwrap(err))
		}
		masked, sec, removed, note, err := credentials.MaskFile(content, spec(r, r.Path))
		if err != nil {
			return nil, nil, fmt.Errorf("credentials.files %s: %w", r.Path, err)
		}
		if note != "" {
			notes = append(notes, "credentials.files "+r.Path+": "+note)
		}
		if removed {
			masked = nil // an empty file in its place
		}
		pl.maskedFiles = append(pl.maskedFiles, maskedFile{Path: r.Path, Content: masked})
		secrets = append(secrets, sec...)
	}
	return secrets, notes, nil
}

func unwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// maskedFile is one credentials.files entry in mode mask: Content (with
// sentinels only) is bound read-only over Path.
type maskedFile struct {
	Path    string
	Content []byte
}

// injector wires the proxy to the secrets: sentinels are swapped back on
// the way out towards the hosts allowed to receive them, and any other
// sentinel is reported.
func injector(pl *Plan, col *violations.Collector) func(*http.Request, string, int, bool) {
	in := credentials.NewInjector(pl.secrets, pl.injectHosts, netproxy.MatchAny, pl.plainInject, 0)
	return func(r *http.Request, host string, port int, terminated bool) {
		for _, l := range in.Rewrite(r, host, port, terminated) {
			if col == nil {
				continue
			}
			col.Add(violations.Record{
				Kind:   KindCredential,
				Source: violations.SourceProxy,
				Host:   l.Host,
				Port:   l.Port,
				Rule:   "credentials: " + l.Name,
				Detail: fmt.Sprintf("sentinel of %s in the %s, not substituted: %s", l.Name, l.Where, l.Reason),
			})
		}
	}
}
