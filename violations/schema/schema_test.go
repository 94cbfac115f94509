package schema

import (
	"strings"
	"testing"
)

const good = `{"time":"2025-03-01T12:04:05.123456789Z","schema":1,"kind":"file-write","action":"deny","source":"observer","pid":4242,"exe":"/usr/bin/touch","command":"sbx -- make","path":"./x","resolved":"/w/x","host":"example.com","port":443,"syscall":"openat","detail":"create: read-only (O_WRONLY|O_CREAT)","rule":"filesystem: writes only under allowWrite and /tmp","probe":true}`

// TestRecordV1 holds the schema file to what the validator implements and
// checks a full record against it.
func TestRecordV1(t *testing.T) {
	s, err := Compile(RecordV1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckLine([]byte(good + "\n")); err != nil {
		t.Fatal(err)
	}
	minimal := `{"time":"2025-03-01T12:04:05.000000000Z","schema":1,"kind":"file-write","action":"discard","source":"overlay"}`
	if err := s.CheckLine([]byte(minimal)); err != nil {
		t.Fatal(err)
	}
}

// TestRecordV1Refuses: each way a record can drift from the format is
// caught, with a message naming what drifted.
func TestRecordV1Refuses(t *testing.T) {
	s := Record()
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"an unknown field", `"probe":true`, `"probe":true,"bogus":1`, `"bogus"`},
		{"an unknown kind", `"kind":"file-write"`, `"kind":"file-append"`, "kind"},
		{"an unknown action", `"action":"deny"`, `"action":"allow"`, "action"},
		{"an unknown source", `"source":"observer"`, `"source":"ebpf"`, "source"},
		{"another version", `"schema":1`, `"schema":2`, "schema"},
		{"a version as a string", `"schema":1`, `"schema":"1"`, "schema"},
		{"no version", `"schema":1,`, ``, `lacks "schema"`},
		{"a denial without its rule", `,"rule":"filesystem: writes only under allowWrite and /tmp"`, ``, `lacks "rule"`},
		{"an empty rule", `"rule":"filesystem: writes only under allowWrite and /tmp"`, `"rule":""`, "rule"},
		{"a time with microseconds", `05.123456789Z`, `05.123456Z`, "time"},
		{"a time not in UTC", `05.123456789Z`, `05.123456789+01:00`, "time"},
		{"a control character", `"path":"./x"`, `"path":"./x\u001b[2J"`, "path"},
		{"a right-to-left override", `"path":"./x"`, `"path":"./x\u202egpj.exe"`, "path"},
		{"a zero-width space", `"host":"example.com"`, `"host":"exa\u200bmple.com"`, "host"},
		{"a line separator", `"detail":"create`, `"detail":"\u2028create`, "detail"},
		{"a number as a string", `"port":443`, `"port":"443"`, "port"},
		{"a fractional pid", `"pid":4242`, `"pid":42.5`, "pid"},
		{"pid 0", `"pid":4242`, `"pid":0`, "pid"},
		{"port 70000", `"port":443`, `"port":70000`, "port"},
		{"probe false", `"probe":true`, `"probe":false`, "probe"},
		{"a command past 256", `"command":"sbx -- make"`, `"command":"` + strings.Repeat("m", 257) + `"`, "command"},
		{"a name twice", `"port":443`, `"port":443,"port":443`, "twice"},
		{"names out of order", `"path":"./x","resolved":"/w/x"`, `"resolved":"/w/x","path":"./x"`, "order"},
		{"spaces", `"schema":1`, `"schema": 1`, "compact"},
		{"two lines", `"schema":1`, "\"schema\":1\n", "line"},
		{"two values", `"probe":true}`, `"probe":true}{}`, "JSON"},
	} {
		line := strings.Replace(good, c.from, c.to, 1)
		if line == good {
			t.Fatalf("%s: %q not in the record", c.name, c.from)
		}
		err := s.CheckLine([]byte(line))
		if err == nil {
			t.Errorf("%s: accepted %s", c.name, line)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not name %q", c.name, err, c.want)
		}
	}
}

// TestCompileRefusesOutsideSubset: a schema may use only what Validate
// implements; a keyword it would skip is an error, not a pass.
func TestCompileRefusesOutsideSubset(t *testing.T) {
	for _, doc := range []string{
		`{"type":"object","properties":{"a":{"format":"date-time"}}}`,
		`{"oneOf":[{"type":"string"}]}`,
		`{"properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		`{"properties":{"a":{"$ref":"other.json"}}}`,
		`{"pattern":"("}`,
		`{"type":"strings"}`,
		`{"enum":[{"a":1}]}`,
		`{"required":"a"}`,
		`{"properties":{"a":{"$defs":{}}}}`,
		`{"type":"object","type":"string"}`,
	} {
		if _, err := Compile([]byte(doc)); err == nil {
			t.Errorf("compiled %s", doc)
		}
	}
}

// TestValidateKeywords exercises each keyword of the subset once both
// ways.
func TestValidateKeywords(t *testing.T) {
	s, err := Compile([]byte(`{
		"$defs": {"short": {"type": "string", "maxLength": 2}},
		"type": "object",
		"properties": {
			"n": {"type": "number", "minimum": 1.5, "maximum": 2},
			"s": {"$ref": "#/$defs/short", "minLength": 1},
			"e": {"enum": [null, true, 3]}
		},
		"additionalProperties": {"type": "boolean"},
		"allOf": [{"required": ["n"]}],
		"if": {"properties": {"n": {"const": 2}}},
		"then": {"required": ["s"]},
		"else": {"required": ["e"]}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, ok := range map[string]bool{
		`{"n":2,"s":"ab"}`:           true,
		`{"n":2.0,"s":"é"}`:          true,
		`{"n":1.5,"e":null}`:         true,
		`{"n":1.5,"e":3.0,"x":true}`: true,
		`{"n":1.4,"e":3}`:            false, // minimum
		`{"n":2.1,"e":3}`:            false, // maximum
		`{"n":2}`:                    false, // then
		`{"n":1.5}`:                  false, // else
		`{"n":2,"s":""}`:             false, // minLength beside $ref
		`{"n":2,"s":"abc"}`:          false, // maxLength through $ref
		`{"n":1.5,"e":false}`:        false, // enum
		`{"n":1.5,"e":3,"x":1}`:      false, // additionalProperties schema
		`{"s":"a"}`:                  false, // allOf
		`[]`:                         false, // type
	} {
		if err := s.Validate([]byte(doc)); (err == nil) != ok {
			t.Errorf("%s: valid %v, want %v (%v)", doc, err == nil, ok, err)
		}
	}
}
