package learn

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// object is a JSON object that keeps its keys in the order read, so
// that adding to a user's settings file changes only what learning adds.
type object struct {
	keys []string
	vals map[string]json.RawMessage
	// kids are the child objects taken out for changing (child).
	kids map[string]*object
}

// parseObject reads one JSON object, keeping its key order.
func parseObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	o := &object{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON at key %q: %w", k, err)
		}
		if o.has(k) {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		o.set(k, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return o, nil
}

func (o *object) has(k string) bool {
	_, ok := o.vals[k]
	if !ok {
		_, ok = o.kids[k]
	}
	return ok
}

func (o *object) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if !o.has(k) {
		o.keys = append(o.keys, k)
	}
	delete(o.kids, k)
	o.vals[k] = v
}

// child is the object at key k, made when absent.
func (o *object) child(k string) (*object, error) {
	if c, ok := o.kids[k]; ok {
		return c, nil
	}
	c := &object{}
	if raw, ok := o.vals[k]; ok {
		var err error
		if c, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
	} else {
		o.keys = append(o.keys, k)
	}
	if o.kids == nil {
		o.kids = map[string]*object{}
	}
	delete(o.vals, k)
	o.kids[k] = c
	return c, nil
}

// addToList appends to the array at k the entries of add it does not
// hold yet (compared as JSON), in add's order.
func (o *object) addToList(k string, add []any) error {
	var list []json.RawMessage
	if raw, ok := o.vals[k]; ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("key %q: not an array: %w", k, err)
		}
	} else if o.has(k) {
		return fmt.Errorf("key %q: not an array", k)
	}
	seen := map[string]bool{}
	for _, e := range list {
		var c bytes.Buffer
		if json.Compact(&c, e) == nil {
			seen[c.String()] = true
		}
	}
	for _, a := range add {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			list = append(list, b)
		}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	o.set(k, b)
	return nil
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if c, ok := o.kids[k]; ok {
			cb, err := c.MarshalJSON()
			if err != nil {
				return nil, err
			}
			b.Write(cb)
		} else {
			b.Write(o.vals[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
