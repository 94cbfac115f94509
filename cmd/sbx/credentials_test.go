//go:build linux

package main

// Credentials (srt's credentials section): the command sees sentinels,
// the proxy puts the real value back only inside terminated TLS towards
// the hosts allowed to receive it, and a sentinel sent anywhere else is
// recorded. Real values never appear in sbx's output.

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"

	"crypto/tls"
	"fmt"
	"github.com/sbx-sh/sbx/credentials"
	"github.com/sbx-sh/sbx/netproxy"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// echoTLS is an HTTPS server (the testCA's certificate) recording what
// arrived: the X-Token header, the key query parameter and the body.
type echoTLS struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func (e *echoTLS) got() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.seen, "\n")
}

func newEchoTLS(t *testing.T, cert tls.Certificate) *echoTLS {
	e := &echoTLS{}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		line := fmt.Sprintf("header=%s query=%s body=%s auth=%s", r.Header.Get("X-Token"), r.URL.Query().Get("key"), b, r.Header.Get("Authorization"))
		e.mu.Lock()
		e.seen = append(e.seen, line)
		e.mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	e.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	e.srv.StartTLS()
	t.Cleanup(e.srv.Close)
	e.srv.URL = strings.Replace(e.srv.URL, "127.0.0.1", "localhost", 1)
	return e
}

func TestCredentialsMaskAndInject(t *testing.T) {
	needTool(t, "curl")
	caPEM, cert := testCA(t)
	d := t.TempDir()
	os.Chmod(d, 0o755)
	caFile := filepath.Join(d, "ca.pem")
	writeFile(t, caFile, string(caPEM))
	inject := newEchoTLS(t, cert) // allowed to receive the token
	other := newEchoTLS(t, cert)  // allowed for traffic, not for the token
	hp, otherHP := hostPort(t, inject.srv.URL), hostPort(t, other.srv.URL)
	const real = "realTOKENvalue0123456789"
	const realFile = "fileSECRET9876543210"
	creds := filepath.Join(d, "creds.txt")
	writeFile(t, creds, "user=me\ntoken="+realFile+"\n")
	settings := filepath.Join(d, "s.json")
	writeFile(t, settings, `{"network": {"allowedDomains": ["`+hp+`", "`+otherHP+`"], "tlsTerminate": {}}, "filesystem": {},
		"credentials": {"envVars": [{"name": "API_TOKEN", "mode": "mask", "injectHosts": ["`+hp+`"]}, {"name": "DROP_ME", "mode": "deny"}],
		"files": [{"path": "`+creds+`", "mode": "mask", "extract": "token=([A-Za-z0-9]+)"}]}}`)
	env := append(os.Environ(), "SSL_CERT_FILE="+caFile, "API_TOKEN="+real, "DROP_ME=gone", "GITHUB_TOKEN=ghp_notmasked")
	vio := filepath.Join(d, "v.jsonl")
	script := `echo "env=$API_TOKEN"; echo "drop=${DROP_ME:-unset}"; echo "gh=${GITHUB_TOKEN:-unset}"; grep token= ` + creds + `
		curl -sS --max-time 10 -H "X-Token: $API_TOKEN" -u "me:$API_TOKEN" "` + inject.srv.URL + `/x?key=$API_TOKEN" --data "{\"t\":\"$API_TOKEN\"}" -H "Content-Type: application/json"
		curl -sS --max-time 10 -H "X-Token: $API_TOKEN" "` + other.srv.URL + `/x?key=$API_TOKEN"`
	r := sh(t, runOpts{dir: d, env: env}, script, "--trust-project-settings", "--settings", settings, "--violations", vio)
	wantCode(t, r, 0)
	sentinel := regexp.MustCompile(`env=(sbxsecret_[0-9a-f]+)`).FindStringSubmatch(r.stdout)
	if sentinel == nil {
		t.Fatalf("the command did not see a sentinel: %s", r)
	}
	if !strings.Contains(r.stdout, "drop=unset") || !strings.Contains(r.stdout, "gh=unset") {
		t.Fatalf("deny-mode and default-denied variables must be gone: %s", r)
	}
	if !regexp.MustCompile(`token=sbxsecret_[0-9a-f]+`).MatchString(r.stdout) {
		t.Fatalf("the masked file should show a sentinel: %s", r)
	}
	// The inject host got the real value everywhere it was sent.
	got := inject.got()
	for _, want := range []string{"header=" + real, "query=" + real, `body={"t":"` + real + `"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("the inject host did not get %q: %s", want, got)
		}
	}
	if !strings.Contains(got, "auth=Basic ") || strings.Contains(got, sentinel[1]) {
		t.Errorf("the inject host saw a sentinel: %s", got)
	}
	// The other host got the sentinel, never the value, and that is a
	// credential violation naming the variable.
	if o := other.got(); strings.Contains(o, real) || !strings.Contains(o, sentinel[1]) {
		t.Errorf("the other host: %s", o)
	}
	recs, _ := os.ReadFile(vio)
	if !strings.Contains(string(recs), `"kind":"credential"`) || !strings.Contains(string(recs), "API_TOKEN") {
		t.Errorf("no credential violation: %s", recs)
	}
	// The real values appear nowhere in sbx's own output: not on stderr,
	// not in the records, not in --dry-run.
	dry := sbx(t, runOpts{dir: d, env: env}, "--trust-project-settings", "--settings", settings, "--dry-run", "--", "true")
	for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "records": string(recs), "dry-run": dry.stdout + dry.stderr} {
		if strings.Contains(out, real) || strings.Contains(out, realFile) {
			t.Errorf("a real value leaked into %s", name)
		}
	}
	if b, _ := os.ReadFile(creds); string(b) != "user=me\ntoken="+realFile+"\n" {
		t.Fatalf("the host file changed: %q", b)
	}
	// Without TLS termination the sentinel leaves as it is (the tunnel is
	// opaque) and sbx says so.
	writeFile(t, settings, `{"network": {"allowedDomains": ["`+hp+`"]}, "filesystem": {}, "credentials": {"envVars": [{"name": "API_TOKEN", "mode": "mask"}]}}`)
	r = sh(t, runOpts{dir: d, env: env}, `curl -sS --max-time 10 --cacert `+caFile+` -H "X-Token: $API_TOKEN" "`+inject.srv.URL+`/y"`, "--trust-project-settings", "--settings", settings)
	if r.code != 0 || !strings.Contains(r.stderr, "terminated TLS") || strings.Contains(inject.got(), "header="+real+" query= body=") {
		t.Fatalf("without termination: %s\n%s", r, inject.got())
	}
}

func TestCredentialsBadInput(t *testing.T) {
	d := t.TempDir()
	for _, c := range []string{
		`{"envVars": [{"name": "A", "mode": "mask", "extract": "token=[a-z]+"}]}`,
		`{"envVars": [{"name": "1BAD", "mode": "mask"}]}`,
		`{"envVars": [{"name": "A", "mode": "mask", "decode": "base64"}]}`,
		`{"envVars": [{"name": "A", "mode": "hide"}]}`,
		`{"envVars": [{"name": "A", "mode": "mask", "onExtractNoMatch": "ignore"}]}`,
		`{"awsPairs": [{"accessKeyIdVar": "1A", "secretAccessKeyVar": "B"}]}`,
		`{"sigv4": {"streaming": "maybe"}}`,
		`{"sigv4": {"chunked": "deny"}}`,
		`{"files": [{"path": "x", "mode": "mask", "injectHosts": ["h"]}]}`,
	} {
		writeFile(t, filepath.Join(d, "s.json"), `{"network": {}, "filesystem": {}, "credentials": `+c+`}`)
		wantRefusedIn(t, d, "credentials", "--trust-project-settings", "--settings", filepath.Join(d, "s.json"))
	}
}

// TestCredentialsReviewed: the ways around masking that review found.
func TestCredentialsReviewed(t *testing.T) {
	d := t.TempDir()
	os.Chmod(d, 0o755)
	// A masked file with a second hard link is refused: the copy would
	// cover one name only.
	creds := filepath.Join(d, "creds.txt")
	writeFile(t, creds, "token=abc123\n")
	if err := os.Link(creds, filepath.Join(d, "other-name")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "s.json"), `{"network": {}, "filesystem": {}, "credentials": {"files": [{"path": "`+creds+`", "mode": "mask"}]}}`)
	wantRefusedIn(t, d, "hard links", "--trust-project-settings", "--settings", filepath.Join(d, "s.json"))
	// A malformed injectHosts entry is refused.
	writeFile(t, filepath.Join(d, "s.json"), `{"network": {"allowedDomains": ["x.test"]}, "filesystem": {}, "credentials": {"envVars": [{"name": "T", "mode": "mask", "injectHosts": ["http://x.test/"]}]}}`)
	wantRefusedIn(t, d, "injectHosts", "--trust-project-settings", "--settings", filepath.Join(d, "s.json"))
	// A CA key given in the settings is not readable in the sandbox, and
	// the certificate is not writable, even inside a writable directory.
	ca, err := netproxy.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(ca.PrivateKey)
	key, cert := filepath.Join(d, "ca.key"), filepath.Join(d, "ca.pem")
	writeFile(t, cert, string(netproxy.CertPEM(ca)))
	writeFile(t, key, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	writeFile(t, filepath.Join(d, "s.json"), `{"network": {"allowedDomains": ["x.test"], "tlsTerminate": {"caCertPath": "`+cert+`", "caKeyPath": "`+key+`"}}, "filesystem": {"allowWrite": ["`+d+`"]}}`)
	r := sh(t, runOpts{dir: d}, `cat `+key+` 2>/dev/null; echo x >> `+cert+` 2>/dev/null && echo WROTE; echo ok > `+d+`/f && echo wrote-other`, "--trust-project-settings", "--settings", filepath.Join(d, "s.json"))
	if strings.Contains(r.stdout, "PRIVATE") || strings.Contains(r.stdout, "WROTE") || !strings.Contains(r.stdout, "wrote-other") {
		t.Fatalf("the CA files: %s", r)
	}
	// Control: without the setting the key is readable.
	r = sh(t, runOpts{dir: d}, `cat `+key)
	if !strings.Contains(r.stdout, "PRIVATE") {
		t.Fatalf("control: %s", r)
	}
}

// TestCredentialsAWSResign: with the AWS key pair masked, a SigV4 request
// the command signs with the sentinel secret (curl --aws-sigv4) reaches the
// server with the real access key and a signature valid under the real
// secret; the secret key itself is never written into a request.
func TestCredentialsAWSResign(t *testing.T) {
	curl := needTool(t, "curl")
	if exec.Command(curl, "--help", "all").Run() != nil {
		t.Skip("curl without --help all")
	}
	if out, _ := exec.Command(curl, "--help", "all").Output(); !strings.Contains(string(out), "--aws-sigv4") {
		t.Skip("curl without --aws-sigv4")
	}
	const akid, secret = "AKIAREALKEY000000001", "realSecretKey/abcdefghijklmnopqrstuvwxyz0"
	caPEM, cert := testCA(t)
	d := t.TempDir()
	os.Chmod(d, 0o755)
	caFile := filepath.Join(d, "ca.pem")
	writeFile(t, caFile, string(caPEM))
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Verify: re-signing with the real key as its own "sentinel"
		// reproduces the request's signature only if it is valid.
		verify := []credentials.AWSPair{{AccessKeyIDSentinel: akid, AccessKeyID: akid, SecretSentinel: secret, Secret: secret}}
		auth := r.Header.Get("Authorization")
		res, err := credentials.ResignSigV4(r, verify, credentials.SigV4Policy{}, 0)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("auth-has-real-key=%v resigned=%v unverified=%v err=%v", strings.Contains(auth, "Credential="+akid+"/"), res.Resigned, res.Unverified, err))
		mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	settings := filepath.Join(d, "s.json")
	writeFile(t, settings, `{"network": {"allowedDomains": ["`+hostPort(t, url)+`"], "tlsTerminate": {}}, "filesystem": {},
		"credentials": {"envVars": [{"name": "AWS_ACCESS_KEY_ID", "mode": "mask"}, {"name": "AWS_SECRET_ACCESS_KEY", "mode": "mask"}]}}`)
	env := append(hermeticEnv(), "SSL_CERT_FILE="+caFile, "AWS_ACCESS_KEY_ID="+akid, "AWS_SECRET_ACCESS_KEY="+secret)
	// The second request is dated 2030 (curl signs the X-Amz-Date it is
	// given): sbx re-signs only for the present, so it is refused, with a
	// record, and never reaches the server.
	vf := filepath.Join(d, "v.jsonl")
	sigv4 := curl + ` -sS --max-time 10 --aws-sigv4 "aws:amz:us-east-1:execute-api" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"`
	r := sh(t, runOpts{dir: d, env: env}, `echo "key=$AWS_ACCESS_KEY_ID"; `+sigv4+` "`+url+`/prod/items?b=2&a=1"; `+
		sigv4+` -o /dev/null -w "future=%{http_code}\n" -H "X-Amz-Date: 20300101T000000Z" "`+url+`/prod/later"`,
		"--trust-project-settings", "--settings", settings, "--violations", vf)
	if r.code != 0 || !strings.Contains(r.stdout, "key=sbxsecret_") || !strings.Contains(r.stdout, "ok") || !strings.Contains(r.stdout, "future=403") {
		t.Fatalf("%s", r)
	}
	var sigRecs int
	for _, rec := range readRecords(t, vf) {
		if rec.Kind == "credential" && rec.Rule == "credentials: sigv4" && strings.Contains(rec.Detail, "2030-01-01") {
			sigRecs++
		}
	}
	if sigRecs != 1 {
		t.Errorf("want one credential record for the request dated 2030, got %d: %s", sigRecs, r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "auth-has-real-key=true resigned=true unverified=false err=<nil>" {
		t.Fatalf("the server saw %q", seen)
	}
	if strings.Contains(r.stdout+r.stderr, secret) || strings.Contains(r.stdout+r.stderr, akid) {
		t.Fatal("a real AWS value reached the command's output")
	}
}

// testJWT is a well-formed HS256 token whose payload names sub; the
// signature is fixed bytes (nothing here verifies it).
func testJWT(sub string) string {
	e := base64.RawURLEncoding
	sig := make([]byte, 32)
	for i := range sig {
		sig[i] = byte(i*11 + len(sub))
	}
	return e.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + e.EncodeToString([]byte(`{"sub":"`+sub+`","exp":1900000000}`)) + "." + e.EncodeToString(sig)
}

// TestCredentialsJWTOpaqueCapture: with extract plus decode "jwt", a
// captured span that is not a JWT (an OAuth cache's opaque refresh token
// next to its JWT access token) follows onExtractNoMatch like a value
// with no match at all. deny (the default) keeps the whole value out: the
// variable is removed and the file is shown empty; warn lets the opaque
// token in with a note; error exits 125. A value whose every capture is a
// JWT is still masked, and the proxy swaps the fake token back on egress.
func TestCredentialsJWTOpaqueCapture(t *testing.T) {
	curl := needTool(t, "curl")
	caPEM, cert := testCA(t)
	d := t.TempDir()
	os.Chmod(d, 0o755)
	caFile := filepath.Join(d, "ca.pem")
	writeFile(t, caFile, string(caPEM))
	srv := newEchoTLS(t, cert)
	hp := hostPort(t, srv.srv.URL)
	fileJWT, envJWT, goodJWT := testJWT("file-user"), testJWT("env-user"), testJWT("good-user")
	const fileRefresh, envRefresh = "fileREFRESHopaque0123456789", "envREFRESHopaque9876543210"
	cache := filepath.Join(d, "oauth.json")
	writeFile(t, cache, `{"access_token":"`+fileJWT+`","refresh_token":"`+fileRefresh+`"}`+"\n")
	reals := []string{fileJWT, envJWT, goodJWT, fileRefresh, envRefresh}
	settings := func(mode string) string {
		nm := ""
		if mode != "" {
			nm = `, "onExtractNoMatch": "` + mode + `"`
		}
		p := filepath.Join(d, "s-"+mode+".json")
		writeFile(t, p, `{"network": {"allowedDomains": ["`+hp+`"], "tlsTerminate": {}}, "filesystem": {},
			"credentials": {"envVars": [
				{"name": "OAUTH", "mode": "mask", "decode": "jwt", "extract": "(?:access|refresh)=(\\S+)"`+nm+`},
				{"name": "GOOD", "mode": "mask", "decode": "jwt", "extract": "access=(\\S+)"`+nm+`}],
			"files": [{"path": "`+cache+`", "mode": "mask", "decode": "jwt", "extract": "\"(?:access|refresh)_token\":\"([^\"]+)\""`+nm+`}]}}`)
		return p
	}
	env := append(hermeticEnv(), "SSL_CERT_FILE="+caFile, "OAUTH=access="+envJWT+" refresh="+envRefresh, "GOOD=access="+goodJWT)
	script := `echo "oauth=${OAUTH-unset}"; echo "good=$GOOD"; echo "file=[$(cat ` + cache + `)]"
		` + curl + ` -sS --max-time 10 -H "X-Token: $GOOD" "` + srv.srv.URL + `/good"
		` + curl + ` -sS --max-time 10 -H "X-Token: $OAUTH" "` + srv.srv.URL + `/oauth"`
	noReal := func(mode string, r result) {
		t.Helper()
		for _, v := range reals {
			if strings.Contains(r.stdout, v) || strings.Contains(r.stderr, v) {
				t.Fatalf("%s: a real value reached the sandbox or sbx's output: %s", mode, r)
			}
		}
	}
	fake := regexp.MustCompile(`good=access=(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.sbxsecret_[A-Za-z0-9_-]+)`)

	// deny, the default (no onExtractNoMatch), and deny said outright.
	for _, mode := range []string{"", "deny"} {
		r := sh(t, runOpts{dir: d, env: env}, script, "--trust-project-settings", "--settings", settings(mode))
		wantCode(t, r, 0)
		noReal(mode, r)
		if !strings.Contains(r.stdout, "oauth=unset") || !strings.Contains(r.stdout, "file=[]") {
			t.Fatalf("%q: the variable must be removed and the file shown empty: %s", mode, r)
		}
		if !strings.Contains(r.stderr, "OAUTH") || !strings.Contains(r.stderr, "value removed") {
			t.Fatalf("%q: sbx should say the value was removed: %s", mode, r)
		}
		if fake.FindStringSubmatch(r.stdout) == nil {
			t.Fatalf("%q: a variable whose captures are all JWTs is masked with a fake JWT: %s", mode, r)
		}
		// The fake JWT went out and the real one arrived.
		if got := srv.got(); !strings.Contains(got, "header=access="+goodJWT+" ") {
			t.Fatalf("%q: the server did not get the real JWT back: %s", mode, got)
		}
	}

	// warn: the JWTs are masked, the opaque tokens pass, and sbx says so;
	// the masked JWT in the variable is still swapped back on egress.
	r := sh(t, runOpts{dir: d, env: env}, script, "--trust-project-settings", "--settings", settings("warn"))
	wantCode(t, r, 0)
	for _, v := range []string{fileJWT, envJWT, goodJWT} {
		if strings.Contains(r.stdout, v) {
			t.Fatalf("warn: a real JWT reached the sandbox: %s", r)
		}
	}
	if !strings.Contains(r.stdout, `"refresh_token":"`+fileRefresh+`"`) || !strings.Contains(r.stdout, "refresh="+envRefresh) || !strings.Contains(r.stderr, "left unmasked") {
		t.Fatalf("warn: the opaque tokens pass with a note: %s", r)
	}
	if !regexp.MustCompile(`file=\[\{"access_token":"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.sbxsecret_`).MatchString(r.stdout) {
		t.Fatalf("warn: the file's JWT should be a fake: %s", r)
	}
	if got := srv.got(); !strings.Contains(got, "header=access="+envJWT+" refresh="+envRefresh+" ") {
		t.Fatalf("warn: the server did not get the real JWT back: %s", got)
	}

	// error: exit 125, one line, nothing runs, no value printed.
	r = sh(t, runOpts{dir: d, env: env}, script, "--trust-project-settings", "--settings", settings("error"))
	noReal("error", r)
	if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, "OAUTH") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("error: want exit 125 and one line naming OAUTH: %s", r)
	}
}

// TestRepoTerminationInjectsNothing: the user masks a token for an
// inject host in a file of their own, which does not terminate TLS (so
// only the sentinel would leave). A repository's file that adds a bare
// "tlsTerminate": {} would switch the injection of the real value on,
// toward an endpoint that can reflect it back: refused with exit 125
// naming the file, and the server sees nothing; trusted, the real value
// arrives (so the refusal is what kept it).
func TestRepoTerminationInjectsNothing(t *testing.T) {
	needTool(t, "curl")
	caPEM, cert := testCA(t)
	d := t.TempDir()
	os.Chmod(d, 0o755)
	caFile := filepath.Join(d, "ca.pem") // in the working directory: visible inside
	writeFile(t, caFile, string(caPEM))
	inject := newEchoTLS(t, cert)
	hp := hostPort(t, inject.srv.URL)
	const real = "realTOKENfromUSER0123456789"
	user := filepath.Join(t.TempDir(), "user.json")
	writeFile(t, user, `{"network": {"allowedDomains": ["`+hp+`"]}, "filesystem": {},
		"credentials": {"envVars": [{"name": "API_TOKEN", "mode": "mask", "injectHosts": ["`+hp+`"]}]}}`)
	repo := filepath.Join(d, ".sbx.json")
	writeFile(t, repo, `{"network": {"tlsTerminate": {}}, "filesystem": {}}`)
	env := append(hermeticEnv(), "SSL_CERT_FILE="+caFile, "API_TOKEN="+real)
	flags := []string{"--settings", user, "--settings", repo}
	script := `curl -sS --max-time 10 -H "X-Token: $API_TOKEN" "` + inject.srv.URL + `/x"`
	r := sh(t, runOpts{dir: d, env: env}, script, flags...)
	wantCode(t, r, 125)
	line := strings.TrimSpace(r.stderr)
	if strings.Contains(line, "\n") || !strings.Contains(line, repo) || !strings.Contains(line, "--trust-project-settings") || !strings.Contains(line, "tlsTerminate") {
		t.Fatalf("want one line naming %s, tlsTerminate and --trust-project-settings: %s", repo, r)
	}
	if got := inject.got(); got != "" {
		t.Fatalf("the inject host saw a request: %q", got)
	}
	// The user's file alone: no termination, the sentinel leaves as it is.
	r = sh(t, runOpts{dir: d, env: env}, `curl -sS --max-time 10 --cacert `+caFile+` -H "X-Token: $API_TOKEN" "`+inject.srv.URL+`/y"`, flags[:2]...)
	if r.code != 0 || strings.Contains(inject.got(), real) || !strings.Contains(inject.got(), "header=sbxsecret_") {
		t.Fatalf("without the repository's file only the sentinel leaves: %s\n%s", r, inject.got())
	}
	// Trusted, the file turns injection on: the real value arrives.
	r = sh(t, runOpts{dir: d, env: env}, script, append([]string{"--trust-project-settings"}, flags...)...)
	wantCode(t, r, 0)
	if !strings.Contains(inject.got(), "header="+real) {
		t.Fatalf("trusted, the real value should be injected (else this test proves nothing): %s\n%s", r, inject.got())
	}
}
