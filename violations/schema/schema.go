// Package schema owns the JSON Schema of sbx's violation records,
// record-v1.json (embedded as RecordV1), and a validator for the subset
// of JSON Schema draft 2020-12 that file uses. The tests use it to check
// every record the violations package and the sbx binary write; sbx
// itself does not link it.
//
// The subset: the keywords type, const, enum, required, properties,
// additionalProperties, pattern, minLength, maxLength, minimum, maximum,
// if/then/else, allOf and $ref to "#/$defs/NAME"; the annotations
// $schema, $id, $comment, $defs, title and description. Compile refuses a
// schema with any other keyword, so the file cannot come to rely on one
// this validator would skip. Patterns are Go regular expressions (the
// file keeps to the syntax Go and ECMA-262 share); lengths count Unicode
// code points, as JSON Schema does.
//
// Beyond JSON Schema, CheckLine holds a record line to sbx's output
// contract: one compact JSON object, no duplicate names, the names in the
// order the schema's properties list them.
package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// RecordV1 is record-v1.json: the schema of a violation record with
// "schema": 1.
//
//go:embed record-v1.json
var RecordV1 []byte

// A Schema is a compiled schema document.
type Schema struct {
	root     *object
	defs     map[string]*object
	patterns map[string]*regexp.Regexp
}

// object is a JSON object that remembers the order of its names.
type object struct {
	keys []string
	m    map[string]any
}

var (
	keywords = map[string]bool{
		"type": true, "const": true, "enum": true, "required": true,
		"properties": true, "additionalProperties": true, "pattern": true,
		"minLength": true, "maxLength": true, "minimum": true, "maximum": true,
		"if": true, "then": true, "else": true, "allOf": true, "$ref": true,
	}
	annotations = map[string]bool{
		"$schema": true, "$id": true, "$comment": true, "$defs": true,
		"title": true, "description": true,
	}
)

// Compile parses and checks a schema document.
func Compile(doc []byte) (*Schema, error) {
	v, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, errors.New("schema: the document is not an object")
	}
	s := &Schema{root: root, defs: map[string]*object{}, patterns: map[string]*regexp.Regexp{}}
	if d, ok := root.m["$defs"]; ok {
		defs, ok := d.(*object)
		if !ok {
			return nil, errors.New("schema: $defs is not an object")
		}
		for _, k := range defs.keys {
			o, ok := defs.m[k].(*object)
			if !ok {
				return nil, fmt.Errorf("schema: $defs/%s is not an object", k)
			}
			s.defs[k] = o
		}
		for _, k := range defs.keys {
			if err := s.check(s.defs[k], "#/$defs/"+k); err != nil {
				return nil, err
			}
		}
	}
	if err := s.check(root, "#"); err != nil {
		return nil, err
	}
	return s, nil
}

// Record is RecordV1, compiled. It panics if the file does not compile
// (a test of this package says it does).
func Record() *Schema {
	s, err := Compile(RecordV1)
	if err != nil {
		panic(err)
	}
	return s
}

// check refuses keywords outside the subset and malformed values, and
// compiles the patterns.
func (s *Schema) check(o *object, at string) error {
	for _, k := range o.keys {
		v := o.m[k]
		if annotations[k] {
			if k == "$defs" && at != "#" {
				return fmt.Errorf("schema: %s: $defs only at the top", at)
			}
			continue
		}
		if !keywords[k] {
			return fmt.Errorf("schema: %s: keyword %q is outside the subset this validator implements", at, k)
		}
		where := at + "/" + k
		switch k {
		case "type":
			t, ok := v.(string)
			if !ok || !slices.Contains([]string{"object", "string", "integer", "number", "boolean", "null", "array"}, t) {
				return fmt.Errorf("schema: %s: want one type name", where)
			}
		case "const":
			if !scalar(v) {
				return fmt.Errorf("schema: %s: want a string, number, boolean or null", where)
			}
		case "enum":
			a, ok := v.([]any)
			if !ok || len(a) == 0 || slices.ContainsFunc(a, func(e any) bool { return !scalar(e) }) {
				return fmt.Errorf("schema: %s: want a non-empty array of strings, numbers, booleans or nulls", where)
			}
		case "required":
			a, ok := v.([]any)
			if !ok {
				return fmt.Errorf("schema: %s: want an array of names", where)
			}
			for _, n := range a {
				if _, ok := n.(string); !ok {
					return fmt.Errorf("schema: %s: want an array of names", where)
				}
			}
		case "properties":
			props, ok := v.(*object)
			if !ok {
				return fmt.Errorf("schema: %s: want an object", where)
			}
			for _, p := range props.keys {
				sub, ok := props.m[p].(*object)
				if !ok {
					return fmt.Errorf("schema: %s/%s: want an object", where, p)
				}
				if err := s.check(sub, where+"/"+p); err != nil {
					return err
				}
			}
		case "additionalProperties", "if", "then", "else":
			if _, ok := v.(bool); ok && k == "additionalProperties" {
				continue
			}
			sub, ok := v.(*object)
			if !ok {
				return fmt.Errorf("schema: %s: want a schema object", where)
			}
			if err := s.check(sub, where); err != nil {
				return err
			}
		case "allOf":
			a, ok := v.([]any)
			if !ok || len(a) == 0 {
				return fmt.Errorf("schema: %s: want a non-empty array of schemas", where)
			}
			for i, e := range a {
				sub, ok := e.(*object)
				if !ok {
					return fmt.Errorf("schema: %s/%d: want a schema object", where, i)
				}
				if err := s.check(sub, fmt.Sprintf("%s/%d", where, i)); err != nil {
					return err
				}
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return fmt.Errorf("schema: %s: want a string", where)
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("schema: %s: %w", where, err)
			}
			s.patterns[p] = re
		case "minLength", "maxLength", "minimum", "maximum":
			if _, ok := v.(json.Number); !ok {
				return fmt.Errorf("schema: %s: want a number", where)
			}
		case "$ref":
			r, ok := v.(string)
			name, found := strings.CutPrefix(r, "#/$defs/")
			if !ok || !found || s.defs[name] == nil {
				return fmt.Errorf("schema: %s: %q is not #/$defs/NAME of a definition here", where, v)
			}
		}
	}
	return nil
}

// Validate checks one JSON document against s and returns every problem
// found, joined, or nil.
func (s *Schema) Validate(doc []byte) error {
	v, err := Parse(doc)
	if err != nil {
		return err
	}
	var errs []error
	s.validate(s.root, v, "", &errs)
	return errors.Join(errs...)
}

func (s *Schema) validate(sch *object, v any, at string, errs *[]error) {
	fail := func(format string, a ...any) {
		where := at
		if where == "" {
			where = "(the record)"
		}
		*errs = append(*errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, a...)))
	}
	for _, k := range sch.keys {
		kv := sch.m[k]
		switch k {
		case "$ref":
			name, _ := strings.CutPrefix(kv.(string), "#/$defs/")
			s.validate(s.defs[name], v, at, errs)
		case "type":
			if t := typeOf(v); t != kv && !(kv == "number" && t == "integer") {
				fail("is %s, want %s", t, kv)
			}
		case "const":
			if !equal(v, kv) {
				fail("is %s, want %s", show(v), show(kv))
			}
		case "enum":
			if !slices.ContainsFunc(kv.([]any), func(e any) bool { return equal(v, e) }) {
				var want []string
				for _, e := range kv.([]any) {
					want = append(want, show(e))
				}
				fail("is %s, want one of %s", show(v), strings.Join(want, ", "))
			}
		case "required":
			if o, ok := v.(*object); ok {
				for _, n := range kv.([]any) {
					if _, has := o.m[n.(string)]; !has {
						fail("lacks %q", n)
					}
				}
			}
		case "properties", "additionalProperties":
			o, ok := v.(*object)
			if !ok {
				continue
			}
			props, _ := sch.m["properties"].(*object)
			for _, n := range o.keys {
				if props != nil {
					if p, ok := props.m[n]; ok {
						if k == "properties" {
							s.validate(p.(*object), o.m[n], at+"/"+n, errs)
						}
						continue
					}
				}
				if k != "additionalProperties" {
					continue
				}
				switch ap := kv.(type) {
				case bool:
					if !ap {
						fail("has %q, which the schema does not allow", n)
					}
				case *object:
					s.validate(ap, o.m[n], at+"/"+n, errs)
				}
			}
		case "pattern":
			if str, ok := v.(string); ok && !s.patterns[kv.(string)].MatchString(str) {
				fail("%s does not match %s", show(v), kv)
			}
		case "minLength", "maxLength":
			str, ok := v.(string)
			if !ok {
				continue
			}
			n := utf8.RuneCountInString(str)
			lim, _ := kv.(json.Number).Int64()
			if k == "minLength" && int64(n) < lim || k == "maxLength" && int64(n) > lim {
				fail("is %d characters long, want %s %d", n, map[string]string{"minLength": "at least", "maxLength": "at most"}[k], lim)
			}
		case "minimum", "maximum":
			num, ok := v.(json.Number)
			if !ok {
				continue
			}
			a, _ := new(big.Rat).SetString(num.String())
			b, _ := new(big.Rat).SetString(kv.(json.Number).String())
			if a == nil || b == nil {
				fail("cannot compare %s with %s", num, kv)
				continue
			}
			if c := a.Cmp(b); k == "minimum" && c < 0 || k == "maximum" && c > 0 {
				fail("is %s, want %s %s", num, map[string]string{"minimum": "at least", "maximum": "at most"}[k], kv)
			}
		case "if":
			var sub []error
			s.validate(kv.(*object), v, at, &sub)
			branch := "then"
			if len(sub) > 0 {
				branch = "else"
			}
			if b, ok := sch.m[branch].(*object); ok {
				s.validate(b, v, at, errs)
			}
		case "allOf":
			for _, e := range kv.([]any) {
				s.validate(e.(*object), v, at, errs)
			}
		}
	}
}

// CheckLine checks one line of sbx's JSON Lines output: a single compact
// JSON object, with a newline at most at its end, names in the order of
// the schema's properties, and valid against s.
func (s *Schema) CheckLine(line []byte) error {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.ContainsAny(line, "\r\n") {
		return errors.New("the record spans more than one line")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, line); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if !bytes.Equal(compact.Bytes(), line) {
		return errors.New("not compact JSON")
	}
	if err := s.Validate(line); err != nil {
		return err
	}
	v, _ := Parse(line)
	o, ok := v.(*object)
	if !ok {
		return nil // Validate said what it is
	}
	props, _ := s.root.m["properties"].(*object)
	if props == nil {
		return nil
	}
	rank := map[string]int{}
	for i, k := range props.keys {
		rank[k] = i
	}
	if !sort.SliceIsSorted(o.keys, func(i, j int) bool { return rank[o.keys[i]] < rank[o.keys[j]] }) {
		return fmt.Errorf("names in the order %s, want the schema's order %s", strings.Join(o.keys, ","), strings.Join(props.keys, ","))
	}
	return nil
}

// Parse reads exactly one JSON value: objects as ordered names and
// values, numbers as json.Number. A name twice in one object and anything
// after the value are errors.
func Parse(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	v, err := parseValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func parseValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := &object{m: map[string]any{}}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			if _, dup := o.m[k]; dup {
				return nil, fmt.Errorf("name %q twice in one object", k)
			}
			v, err := parseValue(d)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k)
			o.m[k] = v
		}
		_, err := d.Token() // }
		return o, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := parseValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token() // ]
		return a, err
	}
	return t, nil
}

func typeOf(v any) string {
	switch v := v.(type) {
	case *object:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case json.Number:
		if r, ok := new(big.Rat).SetString(v.String()); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// scalar says whether v is a string, number, boolean or null: the values
// this validator compares.
func scalar(v any) bool {
	switch v.(type) {
	case *object, []any:
		return false
	}
	return true
}

// equal is JSON equality for the scalars const and enum use (numbers by
// value).
func equal(a, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum && bNum {
		x, ok1 := new(big.Rat).SetString(na.String())
		y, ok2 := new(big.Rat).SetString(nb.String())
		return ok1 && ok2 && x.Cmp(y) == 0
	}
	if aNum || bNum {
		return false
	}
	return scalar(a) && scalar(b) && a == b
}

func show(v any) string {
	switch v := v.(type) {
	case *object:
		return "an object"
	case []any:
		return "an array"
	case json.Number:
		return v.String()
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
