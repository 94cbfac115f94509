package policy

// braceAlternatives expands the first unescaped brace group that holds
// an unescaped top-level comma, as a shell does ("*.{pem,key}" is
// "*.pem" and "*.key"), recursively and nested; a pattern without one is
// itself alone. gitignore has no braces, so for a grant sbx keeps the
// text as it is; a deny expands it (and also keeps the literal text), so
// that "./**/*.{pem,key}" hides what its writer meant rather than
// nothing. At most maxBraceAlternatives come back.
func braceAlternatives(p string) []string {
	out := []string{}
	var expand func(s string)
	expand = func(s string) {
		if len(out) >= maxBraceAlternatives {
			return
		}
		open, commas, close := braceGroup(s)
		if open < 0 {
			out = append(out, s)
			return
		}
		pre, post := s[:open], s[close+1:]
		last := open + 1
		for _, c := range append(commas, close) {
			expand(pre + s[last:c] + post)
			last = c + 1
		}
	}
	expand(p)
	return out
}

// maxBraceAlternatives bounds one pattern's expansion.
const maxBraceAlternatives = 256

// braceGroup finds the first unescaped "{" whose matching "}" encloses
// at least one top-level unescaped ",": its index, the commas' and the
// "}"'s; open is -1 when there is none.
func braceGroup(s string) (open int, commas []int, close int) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth, cs := 0, []int(nil)
			for j := i + 1; j < len(s); j++ {
				switch s[j] {
				case '\\':
					j++
				case '{':
					depth++
				case '}':
					if depth > 0 {
						depth--
						continue
					}
					if len(cs) > 0 {
						return i, cs, j
					}
					j = len(s) // "{x}": no alternatives here; look further
				case ',':
					if depth == 0 {
						cs = append(cs, j)
					}
				}
			}
		}
	}
	return -1, nil, -1
}
