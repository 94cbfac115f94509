package credentials

import (
	"bytes"
	"net/url"
	"strings"
)

// ConfigMasked stands in the masked copy of a configuration file
// (MaskConfig) for each secret value. It is not a sentinel: the proxy
// never puts a real value back in its place.
const ConfigMasked = "SBX_MASKED"

// Config formats MaskConfig knows.
const (
	// FormatNpmrc is npm's ini file (~/.npmrc): "key = value" lines,
	// keys such as "//registry.example/:_authToken".
	FormatNpmrc = "npmrc"
	// FormatPypirc is Python's configparser file (~/.pypirc): "key =
	// value" or "key: value", indented lines continue a value.
	FormatPypirc = "pypirc"
	// FormatYarnrc is Yarn's YAML file (~/.yarnrc.yml): "key: value"
	// lines, nested under npmScopes / npmRegistries.
	FormatYarnrc = "yarnrc"
	// FormatYarnrcV1 is Yarn 1's file (~/.yarnrc): "key value" lines,
	// the key and the value each bare or double-quoted, keys such as
	// "//registry.example/:_authToken" as in .npmrc.
	FormatYarnrcV1 = "yarnrc1"
)

// secretKeys are, per format, the keys (lower case, after the last ':'
// of an npm "//host/:key") whose values are secret.
var secretKeys = map[string]map[string]bool{
	FormatNpmrc:    {"_authtoken": true, "_auth": true, "_password": true, "password": true, "key": true, "token": true},
	FormatPypirc:   {"password": true, "token": true},
	FormatYarnrc:   {"npmauthtoken": true, "npmauthident": true, "npmpassword": true},
	FormatYarnrcV1: {"_authtoken": true, "_auth": true, "_password": true, "password": true, "key": true, "token": true},
}

// MaskConfig returns a copy of content, a configuration file of the given
// format, in which the value of every secret key is ConfigMasked and the
// password of every URL with one (https://user:pass@host) is too; every
// other line is kept as it is. Commented-out assignments are masked as
// well. An unknown format masks every value.
func MaskConfig(content []byte, format string) []byte {
	keys := secretKeys[format]
	var out bytes.Buffer
	cont := false // the previous line was a masked value a pypirc line may continue
	for _, line := range strings.SplitAfter(string(content), "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimRight(line, "\r\n")
		eol := line[len(body):]
		if cont && format == FormatPypirc && body != "" && (body[0] == ' ' || body[0] == '\t') {
			out.WriteString(leading(body) + ConfigMasked + eol)
			continue
		}
		cont = false
		masked, secret := maskLine(body, format, keys)
		cont = secret
		out.WriteString(masked + eol)
	}
	return out.Bytes()
}

// maskLine masks one line; secret says its key was a secret one.
func maskLine(line, format string, keys map[string]bool) (string, bool) {
	// A comment: its text is masked as a line of its own would be.
	if t := strings.TrimLeft(line, " \t"); strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
		pre := line[:len(line)-len(t)+1]
		m, _ := maskLine(t[1:], format, keys)
		return pre + m, false
	}
	i := strings.IndexByte(line, '=')
	if format == FormatYarnrcV1 {
		if j := yarnV1KeyEnd(line); j >= 0 {
			i = j
		}
		// A line Yarn 1 may read some other way still holds no secret
		// in the copy: one that names one is masked after its key.
		if l := strings.ToLower(line); i >= 0 && (strings.Contains(l, "_auth") || strings.Contains(l, "password") || strings.Contains(l, "token")) {
			return line[:i+1] + leading(line[i+1:]) + ConfigMasked, true
		}
	}
	if format == FormatPypirc || format == FormatYarnrc {
		if j := strings.IndexByte(line, ':'); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	if i < 0 {
		return line, false
	}
	key := strings.ToLower(strings.Trim(strings.TrimSpace(line[:i]), `"'`))
	key = strings.TrimSuffix(key, "[]")
	if k := strings.LastIndexByte(key, ':'); k >= 0 {
		key = key[k+1:]
	}
	val := line[i+1:]
	if keys == nil || keys[key] {
		return line[:i+1] + leading(val) + ConfigMasked, true
	}
	return line[:i+1] + maskURLPasswords(val), false
}

// yarnV1KeyEnd is the index of the blank that ends a Yarn 1 line's key
// (a bare word, or a double-quoted string), or -1 when the line holds a
// key alone. The value follows that blank.
func yarnV1KeyEnd(line string) int {
	t := strings.TrimLeft(line, " \t")
	off := len(line) - len(t)
	end := 0
	if strings.HasPrefix(t, `"`) {
		j := strings.IndexByte(t[1:], '"')
		if j < 0 {
			return -1
		}
		end = j + 2
	} else {
		end = strings.IndexAny(t, " \t")
		if end < 0 {
			return -1
		}
	}
	if end >= len(t) || (t[end] != ' ' && t[end] != '\t') {
		return -1
	}
	return off + end
}

// leading is the run of blanks s begins with.
func leading(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// maskURLPasswords masks the password of each URL in s that carries one.
func maskURLPasswords(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '"' || r == '\'' || r == ',' })
	for _, f := range fields {
		u, err := url.Parse(f)
		if err != nil || u.User == nil {
			if at := strings.LastIndexByte(f, '@'); at >= 0 && strings.Contains(f[:at], "://") {
				// Not parseable, but shaped like scheme://userinfo@…:
				// mask the whole user information.
				start := strings.Index(f, "://") + 3
				s = strings.Replace(s, f, f[:start]+ConfigMasked+f[at:], 1)
			}
			continue
		}
		if _, has := u.User.Password(); !has {
			continue
		}
		start := strings.Index(f, "://") + 3
		at := strings.LastIndexByte(f, '@')
		if at < start {
			continue
		}
		user, _, _ := strings.Cut(f[start:at], ":")
		s = strings.Replace(s, f, f[:start]+user+":"+ConfigMasked+f[at:], 1)
	}
	return s
}
