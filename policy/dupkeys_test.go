package policy

import "testing"

func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"a":2}`, "a"},
		{`{"network":{},"filesystem":{"denyRead":["./s"],"denyRead":[]}}`, "filesystem.denyRead"},
		{`{"filesystem":{},"filesystem":{}}`, "filesystem"},
		{`{"x":[{"a":1},{"a":2}],"y":{"z":[1,[2,{"q":1,"q":2}]]}}`, "y.z[][].q"},
		{`{"sandbox":{"network":{"allowedDomains":["a"]},"network":{}}}`, "sandbox.network"},
		{`{"permissions":{"deny":["Read(x)"],"deny":[]}}`, "permissions.deny"},
		{`{"a":{"b":1},"c":{"b":1}}`, ""},
		{`{"a":[1,2,{"b":{}}],"b":3}`, ""},
		{`not json`, ""},
		{`{"filesystem":{"denyRead":[{"path":"/s","PATH":"/n"}]}}`, "filesystem.denyRead[].PATH"},
		{`{"c":{"injectHosts":["a"],"injectHo\u017Fts":["b"]}}`, "c.injectHoſts"},
		{`{"k":1,"\u212a":2}`, "\u212a"}, // the Kelvin sign folds to k
	} {
		if got := duplicateKey([]byte(c.in)); got != c.want {
			t.Errorf("duplicateKey(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}
