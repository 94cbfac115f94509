package main

import (
	"reflect"
	"testing"

	"github.com/sbx-sh/sbx/learn"
	"github.com/sbx-sh/sbx/violations"
)

// TestLearnRefusalOf: each kind of record the observed run makes becomes
// a refusal with the flag that would grant it, or none where no flag
// should (a managed deny, a protected name, the user's own deny).
func TestLearnRefusalOf(t *testing.T) {
	for _, c := range []struct {
		r    violations.Record
		want learn.Refusal
	}{
		{violations.Record{Kind: "file-read", Path: "~/.aws/credentials", Resolved: "/h/.aws/credentials", Rule: "denyRead: /h/.aws"},
			learn.Refusal{Kind: "file-read", What: "/h/.aws/credentials", Rule: "denyRead: /h/.aws", Grant: "--allow-read /h/.aws/credentials"}},
		{violations.Record{Kind: "file-read", Resolved: "/etc/secret", Rule: "denyRead (managed): /etc/secret"},
			learn.Refusal{Kind: "file-read", What: "/etc/secret", Rule: "denyRead (managed): /etc/secret"}},
		{violations.Record{Kind: "file-write", Resolved: "/", Rule: "filesystem: writes only under allowWrite and /tmp"},
			learn.Refusal{Kind: "file-write", What: "/", Rule: "filesystem: writes only under allowWrite and /tmp", Grant: "--allow-write /"}},
		{violations.Record{Kind: "file-write", Resolved: "/p/.git/config", Rule: "protected: /p/.git/config"},
			learn.Refusal{Kind: "file-write", What: "/p/.git/config", Rule: "protected: /p/.git/config", Grant: "--allow-git-config"}},
		{violations.Record{Kind: "file-write", Resolved: "/p/.git/hooks/pre-commit", Rule: "protected: /p/.git/hooks"},
			learn.Refusal{Kind: "file-write", What: "/p/.git/hooks/pre-commit", Rule: "protected: /p/.git/hooks"}},
		{violations.Record{Kind: "network", Host: "a.test", Port: 443, Rule: "default-deny"},
			learn.Refusal{Kind: "network", What: "a.test:443", Rule: "default-deny", Grant: "--allow-domain a.test:443"}},
		{violations.Record{Kind: "network", Host: "db.localhost", Port: 5432, Rule: "address-guard", Detail: "db.localhost resolves to 127.0.0.1: refused loopback address"},
			learn.Refusal{Kind: "network", What: "db.localhost:5432", Rule: "address-guard", Grant: "--allow-domain db.localhost:5432 --allow-domain 127.0.0.1:5432"}},
		{violations.Record{Kind: "network", Host: "evil.test", Port: 443, Rule: "*.test"},
			learn.Refusal{Kind: "network", What: "evil.test:443", Rule: "*.test"}},
		{violations.Record{Kind: "unix-socket", Path: "/run/docker.sock", Rule: "network.allowUnixSockets"},
			learn.Refusal{Kind: "unix-socket", What: "/run/docker.sock", Rule: "network.allowUnixSockets", Grant: "--allow-unix-socket /run/docker.sock"}},
	} {
		got, ok := refusalOf(c.r)
		if !ok || got != c.want {
			t.Errorf("%+v:\n got %+v\nwant %+v", c.r, got, c.want)
		}
	}
}

// TestLearnReplayLine: the replay names the policy, --reads declared,
// --fail-on-violation, the start flags without learn's own, and the
// command (-c included).
func TestLearnReplayLine(t *testing.T) {
	var lf learnFlags
	fs := newRunFlags(false, lf.register).fs
	args := []string{"--allow-domain", "x.test:443", "--output=/o/p.json", "--format", "srt", "--allow-pty", "--reads", "declared", "-c", "make test"}
	got := replayLine(fs, args, learnFlags{output: "/o/p.json", format: "srt"}, false, nil)
	want := []string{"sbx", "--settings", "/o/p.json", "--reads", "declared", "--fail-on-violation", "--allow-domain", "x.test:443", "--allow-pty", "-c", "make test"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	got = replayLine(fs, []string{"--learn-net", "off", "--", "go", "test"}, learnFlags{format: "flags"}, false, []string{"--reads", "declared", "--allow-read", "~/x y"})
	want = []string{"sbx", "--reads", "declared", "--allow-read", "~/x y", "--fail-on-violation", "--", "go", "test"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if w := shellWords(learn.ShellJoin([]string{"--allow-read", "~/a b", "it's", "./c"})); !reflect.DeepEqual(w, []string{"--allow-read", "~/a b", "it's", "./c"}) {
		t.Fatalf("shellWords: %q", w)
	}
}
