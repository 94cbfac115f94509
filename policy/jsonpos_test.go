package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingsJSONErrorPosition: a settings file that is not valid JSON
// is refused with its name, the line and the column (in characters) of
// the fault, whatever kind of fault it is.
func TestSettingsJSONErrorPosition(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, at string
	}{
		{"trailing comma", "{\n  \"network\": {\n    \"allowedDomains\": [\"a.test\",]\n  },\n  \"filesystem\": {}\n}\n", "line 3, column 33"},
		{"missing comma", "{\n  \"network\": {}\n  \"filesystem\": {}\n}\n", "line 3, column 3"},
		{"cut short", "{\"network\": {}, \"filesystem\": {}", "line 1, column 33"},
		{"characters, not bytes", "{\n \"network\": {\"allowedDomains\": [\"é\", x]}, \"filesystem\": {}}", "line 2, column 38"},
		{"not an object", "\n\n  [1]", "line 3, column 3"},
		{"trailing data", "{\"network\": {}, \"filesystem\": {}}\n\nx", "line 3, column 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readLayer(file, false, readCtx{cwd: dir, home: dir})
			var se *SettingsError
			if !errors.As(err, &se) || se.File != file {
				t.Fatalf("want a SettingsError naming %s, got %v", file, err)
			}
			if msg := err.Error(); !strings.Contains(msg, file) || !strings.Contains(msg, " at "+c.at) || strings.Contains(msg, "\n") {
				t.Fatalf("want the file and %q in one line, got %q", c.at, msg)
			}
		})
	}
}
