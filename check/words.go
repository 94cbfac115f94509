package check

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// deniedLists are the built-in denied executables, by list. Every list is
// applied on every host: a command vetted on Linux may be replayed on a
// developer's Mac or Windows machine.
var deniedLists = []struct {
	name  string
	words []string
}{
	{"common", []string{
		"curl", "docker", "ftp", "git", "java", "javac", "jar", "kubectl", "helm",
		"node", "npx", "perl", "php", "podman", "python", "python3", "ruby", "scp",
		"ssh", "telnet", "wget",
	}},
	{"linux", []string{
		"apk", "apt", "apt-get", "bash", "busybox", "chmod", "chown", "crontab", "dd",
		"dnf", "doas", "kill", "killall", "lua", "mkfs", "mount", "nc", "ncat",
		"netcat", "pacman", "pkill", "reboot", "rm", "rmdir", "rsync", "service",
		"sh", "shutdown", "shred", "socat", "su", "sudo", "systemctl", "umount",
		"yum", "zypper",
	}},
	{"macos", []string{
		"brew", "defaults", "diskutil", "hdiutil", "launchctl", "open", "osascript",
		"plutil", "swift", "swiftc",
	}},
	{"windows", []string{
		"bitsadmin", "certutil", "choco", "cmd", "copy", "cscript", "del", "erase",
		"format", "icacls", "move", "mshta", "msiexec", "net", "netsh", "powershell",
		"pwsh", "rd", "reg", "regsvr32", "robocopy", "rundll32", "scoop", "schtasks",
		"sc", "setx", "takeown", "taskkill", "winget", "wscript", "wsl", "wsl.exe",
		"xcopy",
	}},
}

// DefaultDeniedWords returns the built-in denied words by list name
// ("common", "linux", "macos", "windows").
func DefaultDeniedWords() map[string][]string {
	out := make(map[string][]string, len(deniedLists))
	for _, l := range deniedLists {
		out[l.name] = slices.Clone(l.words)
	}
	return out
}

// windowsExts are executable suffixes stripped before comparing, so that
// "git.exe" and "PowerShell.EXE" trip "git" and "powershell".
var windowsExts = []string{".exe", ".com", ".bat", ".cmd", ".ps1"}

var wordSyntax = lazyRegexp(`^[a-z0-9_-][a-z0-9_.-]*$`)

// buildDenied applies the user's additions and removals to the built-in
// lists. It returns lower-case word -> list name.
func buildDenied(add, allow []string) (map[string]string, error) {
	denied := make(map[string]string)
	for _, l := range deniedLists {
		for _, w := range l.words {
			denied[w] = l.name
		}
	}
	added := make(map[string]bool, len(add))
	for i, w := range add {
		lw, err := normalizeWord(w)
		if err != nil {
			return nil, fmt.Errorf("commands.deniedWords[%d]: %w", i, err)
		}
		added[lw] = true
		if _, ok := denied[lw]; !ok {
			denied[lw] = "settings"
		}
	}
	for i, w := range allow {
		lw, err := normalizeWord(w)
		if err != nil {
			return nil, fmt.Errorf("commands.allowWords[%d]: %w", i, err)
		}
		if added[lw] {
			return nil, fmt.Errorf("commands.allowWords[%d]: %q is also in deniedWords; keep it in one list", i, w)
		}
		if _, ok := denied[lw]; !ok {
			return nil, fmt.Errorf("commands.allowWords[%d]: %q is not a denied word, so allowing it does nothing; check the spelling", i, w)
		}
		delete(denied, lw)
	}
	return denied, nil
}

func normalizeWord(w string) (string, error) {
	lw := strings.ToLower(w)
	if !wordSyntax().MatchString(lw) || strings.HasSuffix(lw, ".") {
		return "", fmt.Errorf("%q is not a word: use letters, digits, '_', '-' and inner '.'", w)
	}
	return lw, nil
}

// deniedHit is one denied word found in a text.
type deniedHit struct {
	word string // the denied word, lower case
	list string // the list it comes from
	text string // the text as written
	off  int    // byte offset of text in the searched string
}

// isWordRune reports whether r belongs to a word for denied-word matching.
// Path separators belong to words: only the last path segment names an
// executable, so "./cmd/server" does not trip "cmd" but
// "node_modules/.bin/node" trips "node".
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-./\\", r)
}

// deniedIn finds denied words in s. Words are maximal runs of letters,
// digits and "_-./\"; of each, only the part after the last "/" or "\"
// is compared, case-insensitively, with trailing dots and a Windows
// executable suffix ignored.
func deniedIn(s string, denied map[string]string) []deniedHit {
	var hits []deniedHit
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		field := s[start:end]
		segOff := strings.LastIndexAny(field, `/\`) + 1
		seg := field[segOff:]
		if w, ok := deniedWord(seg, denied); ok {
			hits = append(hits, deniedHit{word: w, list: denied[w], text: seg, off: start + segOff})
		}
		start = -1
	}
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return hits
}

// deniedWord reports which denied word, if any, the segment names.
func deniedWord(seg string, denied map[string]string) (string, bool) {
	lw := strings.TrimRight(strings.ToLower(seg), ".")
	if _, ok := denied[lw]; ok {
		return lw, true
	}
	for _, ext := range windowsExts {
		if base, ok := strings.CutSuffix(lw, ext); ok {
			base = strings.TrimRight(base, ".")
			if _, ok := denied[base]; ok {
				return base, true
			}
		}
	}
	return "", false
}
