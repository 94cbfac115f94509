package landlock

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestReadRulesPathOrder(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name        string
		deny, allow []string
		want        []Rule
	}{
		{
			// A deny inside a re-allowed path inside a denied root stays
			// denied: the /etc grant is split around /etc/shadow.
			name: "deny / allow /etc deny /etc/shadow",
			deny: []string{"/", dir + "/etc/shadow"}, allow: []string{dir + "/etc"},
			want: []Rule{{Path: dir + "/etc", Access: accessReadDir}},
		},
		{
			name: "deny / allow a path",
			deny: []string{"/"}, allow: []string{dir + "/in"},
			want: []Rule{{Path: dir + "/in", Access: Read}},
		},
		{
			name: "an allowRead outside every deny adds nothing",
			deny: []string{dir + "/x"}, allow: []string{dir + "/y"},
			want: nil,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var notes []string
			got := readRules(c.deny, c.allow, nil, false, &notes)
			var filtered []Rule
			for _, r := range got {
				if r.Path == dir+"/etc" || r.Path == dir+"/in" || r.Path == dir+"/y" {
					filtered = append(filtered, r)
				}
			}
			if !reflect.DeepEqual(filtered, c.want) {
				t.Fatalf("rules %+v", got)
			}
			for _, r := range got {
				if r.Path == "/" && c.deny[0] == "/" {
					t.Fatalf("/ granted despite deny /: %+v", got)
				}
			}
		})
	}
}

// entryPrefix must give filepath.Join's answer, clean dir or not: readRules
// compares its result with the denied path's ancestors.
func TestEntryPrefix(t *testing.T) {
	for _, dir := range []string{"/", "/etc", "/etc/", "//etc", "/etc/./ssh", "/a/../etc", "/.config", "/etc/.d"} {
		if got, want := entryPrefix(dir)+"x", filepath.Join(dir, "x"); got != want {
			t.Errorf("entryPrefix(%q)+x = %q, want %q", dir, got, want)
		}
	}
}
