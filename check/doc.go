// Package check is the command-policy gate behind `sbx check`: it decides
// whether a command string proposed by an agent (a task to add to a task
// runner, a shell call a skill wants to make, the argument of `sbx -c`) is
// acceptable before anything runs it.
//
// The package owns the rules, the "commands" section of the settings file,
// and the `sbx check` command line ([Main]). It does not run commands, does
// not sandbox them and does not scrub environments: it only says yes or no,
// with reasons. It reads the file system only to resolve paths.
//
// A command is acceptable when [Config.Check] returns no findings:
//
//	cfg, err := check.LoadFile("settings.json") // or check.Default()
//	if err != nil {
//		return err
//	}
//	if findings := cfg.Check(root, command); len(findings) > 0 {
//		for _, f := range findings {
//			fmt.Println(f) // "deniedWords at 13: \"git\" is a denied executable (common list)"
//		}
//		return errRefused
//	}
//
// # Command line
//
//	sbx check [--settings FILE] [--root DIR] [--json] [--env KEY=VALUE]... [--cwd DIR] -- 'COMMAND STRING'
//	sbx check [--json] --verb add|remove --name NAME --confirm 'ADD NAME'
//
// Exit status 0 with nothing on stdout means acceptable. Exit status 1 means
// refused; stdout then holds one finding a line,
//
//	metachars at 12: the shell metacharacter '&' is not allowed
//
// or, with --json, one JSON array:
//
//	[{"rule":"metachars","token":"&","position":12,"message":"the shell metacharacter '&' is not allowed"}]
//
// Exit status 125 means bad input to sbx itself — an unknown flag, a missing
// command string, a --root that is not a directory, a settings file that is
// missing, is not JSON, or has an unknown key or a wrongly typed value in
// its "commands" section — and stderr holds one line naming the input and
// what to do. `sbx check` always checks, whatever "enabled" says; `sbx -c`
// runs the same gate first only when "enabled" is true.
//
// Positions are byte offsets into the command string as given, counting
// from 0. Findings about --env and --cwd have position -1.
//
// # Rules
//
// Every rule is on by default and can be switched off on its own in the
// "rules" object of the settings. The rules are independent: the
// structural rules still parse the command when the character rules are
// off, and the character rules do not assume the parser. Findings come
// ordered by rule, in this order, then by position.
//
// length: the command, with surrounding white space trimmed, has at most
// maxLength characters (Unicode code points; default 300). The finding
// points at the first character past the limit.
//
// charset: the whole command, surrounding white space included, matches
// the charset pattern, by default
//
//	^[A-Za-z0-9_./:@%+=,\-\\ "']+$
//
// so tabs, newlines, non-ASCII characters (unicode dashes and quotes,
// non-breaking spaces), "~", "*", "?", "#", "!", braces, brackets and the
// metacharacters below are refused. A configured pattern is matched
// against the whole string: it is wrapped as ^(?:pattern)$, so anchors are
// optional. Each offending character is reported once, at its first
// position; when no single character is at fault (a pattern that is not a
// character class), the finding covers the whole command.
//
// metachars: none of ; & | < > $ ( ) ` newline and carriage return occurs
// anywhere, quoted or not. Each is reported once, at its first position.
//
// structure: the command is parsed with mvdan.cc/sh/v3/syntax (Bash
// dialect, the widest, so that whatever a shell would see is recognised)
// and must be exactly one simple command whose words are plain text. A
// string that does not parse is refused with the parser's message. Refused
// constructs, each reported where it occurs: a second command; the
// separators ; and &; chaining with && and ||; pipes | and |&; negation
// with !; subshells ( ... ) and groups { ... }; if, while, until, for,
// case, select, function definitions, (( )), [[ ]], time, coproc, let,
// declare, export, local, readonly, typeset; redirections of any kind,
// here-documents and here-strings; variable assignments (FOO=bar cmd);
// parameter expansion ($x, ${x}), command substitution ($(...) and
// backticks), arithmetic expansion, process substitution <(...); $'...'
// and $"..." quoting; unquoted glob characters * ? [, brace expansion
// {a,b}, tilde expansion (~ at the start of a word or after an unquoted =
// or :) and extended globs; comments. Quoting is understood: 'a;b' is one
// word holding a semicolon (which the metachars rule still refuses, unless
// switched off).
//
// prefix: the command is one simple command whose words, after quote
// removal, match one of the allowed prefix patterns in full. Matching is
// case-insensitive. A command that is not a single simple command of
// plain words cannot match and is refused by this rule too. The default
// patterns (see [DefaultPrefixes]):
//
//	npm run <script> [-- ...]
//	pnpm run <script> [-- ...]
//	yarn [run] <script!add|install|dlx|exec|...> [-- ...]
//	dotnet (run|watch|test|build) ...
//	cargo (run|test|build|watch) ...
//	go (run|test|build) ...
//
// So "npm run dev", "npm run build -- --watch", "pnpm run test", "yarn
// dev", "dotnet watch --project src/Api", "cargo test" and "go build
// ./cmd/server" pass, while "npm install", "node server.js", "bash
// scripts/dev.sh", "npm run dev --prefix /" (npm's own flags go before
// "--") and "yarn add -- left-pad" (a yarn built-in, not a script) do
// not. The yarn built-ins excluded as script names are:
//
//	access add audit autoclean bin cache check config constraints create
//	dedupe dlx exec explain generate-lock-entry global help import info
//	init install licenses link list login logout node npm outdated owner
//	pack patch patch-commit plugin policies publish rebuild remove run set
//	stage tag team unlink unplug up upgrade upgrade-interactive version
//	versions why workspace workspaces
//
// deniedWords: no denied executable appears anywhere in the string,
// compared case-insensitively on word boundaries, in the text as written
// and again in every parsed word after quote removal (so g"i"t and g\it
// trip "git"). A word is a maximal run of letters, digits and the
// characters _ - . / \; only its last path segment is compared, with
// trailing dots and a Windows executable suffix (.exe .com .bat .cmd .ps1)
// ignored. Thus "npm run x -- git pull", "npm run x -- --exec=git",
// "npm run x -- node_modules/.bin/node" and "npm run x -- GIT.EXE" are
// refused, while "go build ./cmd/server" (the segment is "server"),
// "go build ./cmd/" (no segment), "npm run format-check" and
// "scripts/dev.sh" are not; "go build ./cmd" is, since a path ending in a
// denied word may name that executable. Note that a script
// named like a denied word ("npm run format", "npm run open") is refused;
// allow the word in the settings if that is wanted. The lists of every
// operating system apply on every host:
//
//	common:  curl docker ftp git java javac jar kubectl helm node npx perl
//	         php podman python python3 ruby scp ssh telnet wget
//	linux:   apk apt apt-get bash busybox chmod chown crontab dd dnf doas
//	         kill killall lua mkfs mount nc ncat netcat pacman pkill reboot
//	         rm rmdir rsync service sh shutdown shred socat su sudo
//	         systemctl umount yum zypper
//	macos:   brew defaults diskutil hdiutil launchctl open osascript plutil
//	         swift swiftc
//	windows: bitsadmin certutil choco cmd copy cscript del erase format
//	         icacls move mshta msiexec net netsh powershell pwsh rd reg
//	         regsvr32 robocopy rundll32 scoop schtasks sc setx takeown
//	         taskkill winget wscript wsl wsl.exe xcopy
//
// paths: no word names a place outside the root (the --root directory,
// by default the working directory, with its symlinks resolved). Every
// word of the parsed command is looked at, including redirection targets
// and assignment values; when the string does not parse, the words are
// its blank-separated fields with quote characters removed. For a word:
//
//   - a flag (-x, --watch) is not a path; of --flag=value and of
//     KEY=value only the value is checked;
//   - a ".." segment (between / or \) in the value or in the word as
//     written is refused;
//   - an absolute path, ~ or ~/... (the home directory), ~user (refused),
//     C:\... or \\server (refused) and $VAR or ${VAR} (expanded from the
//     environment of the checking process; unset is empty) are resolved,
//     symlink by symlink, and refused if they end outside the root;
//   - a relative path with a / is resolved from the root the same way, so
//     a symlink in the root pointing outside is caught;
//   - a simple name (no /) is a path only if it exists in the root, and a
//     quoted word only if it exists at all: "npm run lint -- '// @ts-ignore'"
//     passes while "cat '/etc/passwd'" does not;
//   - /dev/null, /dev/zero, /dev/urandom, /dev/random, /dev/stdin,
//     /dev/stdout and /dev/stderr are always allowed.
//
// Dangling symlinks are followed to their target's spelling, so a link to
// a place that does not exist yet cannot be used to escape either.
//
// # Environment, working directory and confirmations
//
// [CheckEnv] refuses environment keys PATH, PATHEXT, NODE_OPTIONS,
// LD_PRELOAD, LD_LIBRARY_PATH and DYLD_* (any case), keys that are not
// variable names, and values holding NUL. Values are taken literally: no
// ${VAR} expansion, no .env loading. [CheckCwd] requires a working
// directory, relative to the root or absolute, to resolve (symlinks
// included) to the root or below; ".." segments, "~" and "$" are refused.
// On the command line these are --env KEY=VALUE (repeatable) and --cwd.
// These checks are not switchable rules: callers decide whether to make
// them.
//
// [CheckConfirm] verifies the literal confirmation of a two-step add or
// remove: the caller states the verb, and the string must be exactly
// "ADD <name>" or "REMOVE <name>" — upper-case verb, one space, the name
// byte for byte. "add web", "ADD  web", "ADD web " and "REMOVE web" for an
// add are all refused. On the command line:
//
//	sbx check --verb add --name web --confirm 'ADD web'   # exit 0
//	sbx check --verb remove --name web --confirm 'ADD web' # exit 1
//
// # Prefix grammar
//
// An allowed prefix is a pattern over the words of the command, separated
// by blanks:
//
//	word          a literal word, matched case-insensitively
//	<name>        exactly one word, which must not be empty or start with "-"
//	<name!a|b>    like <name>, but not one of the listed words
//	( x | y )     one of the alternatives; each is a sequence
//	[ x ]         x or nothing
//	...           any number of further words, flags included
//	[args]        the same as "..."
//
// The pattern must start with a literal word and match the whole command;
// "..." and "[args]" may only end it (possibly inside a final group).
// Placeholders never match flags, so that "yarn <script>" cannot be "yarn
// --frozen-lockfile" (an install); in particular "[-- <args>]" takes one
// non-flag word, and "[-- ...]" is the way to say "anything after --".
// Examples:
//
//	make (test|lint)              "make test", not "make test extra"
//	make <target>                 "make all", not "make -j8 all"
//	just [--quiet] <recipe> ...   "just build --release"
//	npm run <script> [-- ...]     "npm run build -- --watch"
//
// Claude-style entries are accepted too: Bash(git:*) allows any command
// whose first words are exactly "git" (followed by anything), and
// Bash(npm run test) allows exactly "npm run test". Wildcards other than a
// trailing ":*", a bare "Bash" and other tool names (Read(...), ...) are
// errors. A prefix naming a denied word can never pass while the
// deniedWords rule is on, so such an entry is an error unless the word is
// also in allowWords: Bash(git:*) needs "allowWords": ["git"]. Like
// Claude's, such entries restrict the command, not its arguments:
// Bash(git:*) allows "git push --force".
//
// # Settings
//
// The settings file is the JSON file sbx reads with --settings. This
// package reads only its "commands" object, or "sandbox.commands" for
// Claude-Code-shaped files (both at once is an error); every other key
// belongs to others and is ignored. [FromSettings] and [LoadFile] take a
// whole file, [ParseConfig] the value of the "commands" key. Every key is
// optional:
//
//	{"commands": {
//	  "enabled": true,                 // sbx -c gates through the rules (default false)
//	  "maxLength": 300,                // length limit, 1 to 100000 (default 300)
//	  "charset": "^[a-z ]+$",          // character-set pattern (default above)
//	  "rules": {                       // switch rules off; every rule defaults to true
//	    "length": true, "charset": true, "metachars": true, "structure": true,
//	    "prefix": true, "deniedWords": true, "paths": true},
//	  "allowedPrefixes": ["make (test|lint)", "Bash(git:*)"], // added to the defaults
//	  "replaceDefaultPrefixes": false, // true: allowedPrefixes replace the defaults
//	  "deniedWords": ["terraform"],    // added to the denied words
//	  "allowWords": ["git"]            // removed from the denied words
//	}}
//
// (Comments are for this description only; the file is plain JSON.) The
// section is read strictly: an unknown or duplicate key, in "commands" or
// in "rules", a value of the wrong type, null, an invalid pattern or
// regular expression, a word that is not a word, an allowWords entry that
// is not denied or that is also in deniedWords, and replaceDefaultPrefixes
// with no allowedPrefixes while the prefix rule is on are all errors
// naming the key. A missing or empty "commands" section means [Default].
//
// # Limits
//
// The gate vets one string; it is not a sandbox. An allowed prefix runs
// code the agent may have written (a package.json script, a Go test), "go
// run" may fetch a module from the network, and "dotnet run --project
// src/Api" runs whatever src/Api holds: confinement is the job of the
// sandbox sbx builds around the command.
package check
