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
				notes = append(notes, "credentials.envVars "+note) // note begins with the name
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
			notes = append(notes, "credentials.files "+note) // note begins with the path
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

// injector wires the proxy to the secrets: SigV4 requests of a masked AWS
// identity are re-signed with the real keys, sentinels are swapped back
// on the way out towards the hosts allowed to receive them, and any other
// sentinel is reported. An AWS secret access key is only ever used to
// sign, never written into a request.
func injector(pl *Plan, col *violations.Collector) func(*http.Request, string, int, bool) string {
	signOnly := map[string]bool{}
	for _, ap := range pl.awsPairs {
		signOnly[ap.SecretSentinel] = true
	}
	var inject []credentials.Secret
	for _, s := range pl.secrets {
		if !signOnly[s.Sentinel] {
			inject = append(inject, s)
		}
	}
	in := credentials.NewInjector(inject, pl.injectHosts, netproxy.MatchAny, pl.plainInject, 0)
	return func(r *http.Request, host string, port int, terminated bool) string {
		if len(pl.awsPairs) > 0 && (terminated || pl.plainInject) {
			var pairs []credentials.AWSPair
			for i, ap := range pl.awsPairs {
				hosts := pl.awsHosts[i]
				if len(hosts) == 0 {
					hosts = pl.injectHosts
				}
				if netproxy.MatchAny(hosts, host, port) {
					pairs = append(pairs, ap)
				}
			}
			if len(pairs) > 0 {
				res, err := credentials.ResignSigV4(r, pairs, pl.sigv4, 0)
				switch {
				case err != nil:
					return "cannot re-sign this AWS request: " + err.Error()
				case res.Denied != "":
					if col != nil {
						col.Add(violations.Record{
							Kind:   KindCredential,
							Source: violations.SourceProxy,
							Host:   host,
							Port:   port,
							Rule:   "credentials: sigv4",
							Detail: "AWS request not re-signed: " + res.Denied,
						})
					}
					return res.Denied
				}
			}
		}
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
		return ""
	}
}

// pairAWS builds the masked AWS identities: credentials.awsPairs, and the
// standard AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN)
// trio when both keys are masked. hosts[i] are the injectHosts of pair i's
// access key variable (empty: allowedDomains).
func pairAWS(p *policy.Policy, secrets []credentials.Secret) (pairs []credentials.AWSPair, hosts [][]string) {
	c := p.Credentials
	if c == nil {
		return nil, nil
	}
	byName := map[string]credentials.Secret{}
	for _, s := range secrets {
		if _, dup := byName[s.Name]; !dup {
			byName[s.Name] = s
		}
	}
	rules := map[string]policy.CredentialRule{}
	for _, r := range c.EnvVars {
		rules[r.Name] = r
	}
	want := append([]policy.AWSPair(nil), c.AWSPairs...)
	std := policy.AWSPair{AccessKeyIDVar: "AWS_ACCESS_KEY_ID", SecretAccessKeyVar: "AWS_SECRET_ACCESS_KEY", SessionTokenVar: "AWS_SESSION_TOKEN"}
	listed := false
	for _, w := range want {
		listed = listed || w.AccessKeyIDVar == std.AccessKeyIDVar
	}
	if !listed {
		want = append(want, std)
	}
	for _, w := range want {
		id, okID := byName[w.AccessKeyIDVar]
		sec, okSec := byName[w.SecretAccessKeyVar]
		if !okID || !okSec {
			continue // not both masked (or not set): nothing to re-sign
		}
		ap := credentials.AWSPair{AccessKeyIDSentinel: id.Sentinel, AccessKeyID: id.Real, SecretSentinel: sec.Sentinel, Secret: sec.Real}
		if tok, ok := byName[w.SessionTokenVar]; ok && w.SessionTokenVar != "" {
			ap.SessionTokenSentinel, ap.SessionToken = tok.Sentinel, tok.Real
		}
		pairs = append(pairs, ap)
		hosts = append(hosts, rules[w.AccessKeyIDVar].InjectHosts)
	}
	return pairs, hosts
}
