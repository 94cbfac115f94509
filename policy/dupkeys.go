package policy

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// duplicateKey returns the dotted path of the first key that appears
// twice in one object of the JSON document data ("" when none does, or
// when data is not valid JSON: the caller's decode reports that). A
// second "denyRead" would otherwise replace the first, silently, and a
// reviewer reads the first.
func duplicateKey(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj  bool
		keys map[string]bool
		path string // where this container is: "filesystem", "x[]"
		key  string // in an object: the key whose value comes next
		want bool   // in an object: the next string token is a key
	}
	var stack []*frame
	join := func(p, k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.want {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := tok.(string)
			fk := foldKey(k)
			if top.keys[fk] {
				return join(top.path, k)
			}
			top.keys[fk], top.key, top.want = true, k, false
			continue
		}
		path := ""
		if top != nil && top.obj {
			path, top.want = join(top.path, top.key), true
		} else if top != nil {
			path = top.path + "[]"
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, path: path, want: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: path})
		case json.Delim(']'):
			stack = stack[:len(stack)-1] // the object around it wants a key already (set above)
		}
		if len(stack) == 0 {
			return ""
		}
	}
}

// foldKey is k case-folded as encoding/json matches a key to a struct
// field (simple Unicode folding: "PATH" and "path", "ſ" and "s" are one
// key), so that two spellings a decoder would take for the same field
// count as a duplicate.
func foldKey(k string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < m {
				m = f
			}
		}
		return m
	}, k)
}
