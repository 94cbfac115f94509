// Package violations owns sbx's account of what the sandbox refused: one
// record type (Record), one collector that runs in the supervisor
// (Collector), and the sinks that write records out (Sink). It tells a
// user, an agent or a CI log exactly what was denied, and nothing else.
//
// The sources — the network proxy, the seccomp user-notification listener,
// Landlock audit, the file-system observer — live in their own packages and
// only call Collector.Add. This package knows nothing of them: it sanitises,
// filters, bounds, counts and writes.
//
//	c := violations.New(violations.Options{
//		Command: "npm test",
//		Ignore:  pol.IgnoreViolations,
//		Sinks:   []violations.Sink{fileSink},
//	})
//	proxy.OnDeny = c.Add // and the other sources
//	... run the command ...
//	sum := c.Close()
//	sum.WriteText(os.Stderr, "text")
//
// # Record schema
//
// A record is one JSON object per denial, one per line (JSON Lines). The
// field names are the schema; fields after "source" appear only when set.
//
//	field     type    meaning
//	time      string  when the denial was seen: RFC 3339, UTC, nine fractional
//	                  digits ("2025-03-01T12:00:00.123456789Z"; TimeFormat)
//	schema    number  the version of this format: 1 (SchemaVersion)
//	kind      string  file-read, file-write, network, unix-socket, syscall,
//	                  signal, limit (a limit the run hit), credential (a
//	                  masked secret not substituted) ("unknown" if a source
//	                  gave none)
//	action    string  "deny"; "discard" for a write a discard overlay took
//	source    string  proxy, seccomp, landlock, observer, overlay, after-run,
//	                  cgroup, rlimit, tmpfs, supervisor, seatbelt — what saw it
//	pid       number  the process refused (in the pid namespace of the source)
//	exe       string  its executable
//	command   string  the sbx command line, at most 256 bytes (MaxCommand),
//	                  cut on a rune boundary and ending in "…" when cut
//	path      string  the path as the command gave it
//	resolved  string  the path as resolved, when it differs from path
//	host      string  the host name or address asked for
//	port      number  the port
//	syscall   string  the system call refused, e.g. "ptrace"
//	detail    string  what else decides the meaning: socket family, ioctl
//	                  name, proxy protocol (HTTP, CONNECT, SOCKS5), …
//	rule      string  the policy entry or default that decided; every
//	                  denial has one ("default-deny", "net-none",
//	                  "denyRead: /home/u/.ssh", "seccomp: ptrace",
//	                  "--memory 96M")
//	probe     bool    true for a runtime's refused feature probe (only with
//	                  Options.Probes; see below)
//
// For example:
//
//	{"time":"2025-03-01T12:00:00.123456789Z","schema":1,"kind":"file-write","action":"deny","source":"observer","pid":12,"exe":"/usr/bin/touch","command":"make install","path":"/usr/local/bin/x","rule":"filesystem: writes only under allowWrite and /tmp"}
//	{"time":"2025-03-01T12:00:01.000000000Z","schema":1,"kind":"network","action":"deny","source":"proxy","command":"make install","host":"evil.example","port":443,"detail":"CONNECT","rule":"deniedDomains: evil.example"}
//
// The schema is also a file, violations/schema/record-v1.json (JSON
// Schema draft 2020-12), which the tests hold every record this package
// and the sbx binary write to. Within one schema number fields, kinds,
// sources and actions may be added; existing fields keep their name,
// type and meaning. A reader ignores fields it does not know and takes a
// kind, source or action it does not know as unknown to it (an action
// other than "deny" is never a denial). A change that would break a
// reader of schema 1 writes "schema":2 (and a record-v2.json). Time stays
// the first field, so that lines sort by it as text.
//
// The text and github formats (below) render the same record for people;
// they carry no version, and a program reads the JSON.
//
// # Sanitising
//
// Paths, hosts and executables are chosen by the sandboxed command, so every
// string field is treated as hostile. Add passes each through Sanitize:
// C0 and C1 control characters, DEL, Unicode format characters (category
// Cf: the bidi controls U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
// U+061C, zero-width characters, BOM, tag characters), U+2028, U+2029 and
// every invalid UTF-8 byte become U+FFFD; then each field is capped at 4096
// bytes (MaxField), the command at 256, cut on a rune boundary and ending in
// "…". A replacement rather than a deletion keeps "/etc/pass\x01wd" from
// being shown — or matching an ignore rule — as "/etc/passwd". The sinks
// sanitise again, the JSON encoder escapes whatever is left that JSON
// requires, and Record.Line quotes (Go syntax) any path, host or executable
// containing a space, quote, parenthesis, backslash or unprintable
// character. An escape sequence, a newline or a right-to-left override in a
// file name therefore reaches no terminal, log viewer or CI annotation.
//
// # Memory
//
// The supervisor must stay small while a hostile command floods it with
// denials. Add never blocks and never waits for a sink: it hands the record
// to a bounded queue (Options.Queue records, default 4096, preallocated
// at about 216 bytes each, and Options.QueueBytes bytes of strings, default
// 2 MiB), and one writer goroutine drains the queue into the sinks. A
// record that does not fit is counted in Summary.Dropped and forgotten;
// the count is reported ("N more not recorded (queue full)"). Beyond the
// queue the collector keeps only counters, at most MaxKinds (64) kind
// counts, and the first Options.Keep (default 5) records for the summary.
// A slow sink therefore costs records, never memory or the command's time.
// Close waits at most Options.CloseTimeout (default 5s) for the queue to
// drain, so a sink stuck on a full pipe cannot hang sbx's exit; what is
// still queued then is dropped and counted.
//
// # ignoreViolations
//
// Options.Ignore is the ignoreViolations object of srt / Claude Code
// settings: a map from a command substring to a list of path substrings,
// the key "*" standing for every command. A record is ignored when
//
//   - the command (the record's own Command if a source set one, else the
//     full, untruncated Options.Command) contains a key, or the key is "*";
//     and
//   - its path contains one of that key's values, or its host does. The path
//     is Resolved when set, else Path: the path the kernel acted on, so
//     "/tmp/cache/../../home/u/.bashrc" is not hidden by an entry for
//     "/tmp/cache". Records with neither a path nor a host (syscalls,
//     signals) are ignored only by an empty value, which, as a substring of
//     everything, ignores every record for that command (as in srt).
//
// Matching is by plain substring, case-sensitive, after sanitising both
// sides. Ignored records are not written, not counted in Total or Dropped,
// only in Summary.Ignored. Ignoring silences the report, never the
// enforcement: the operation was still refused.
//
// # Probes
//
// A record marked Probe is a call a language runtime makes on every
// start to see whether a kernel feature is there (the list, with the
// reason for each entry, is seccomp.Probes: Node's libuv calling
// io_uring_setup). It was refused like any other, but it is no violation:
// it is counted only in Summary.Probes — not in Total, ByKind, First or
// Dropped, so it makes no summary line and no --fail-on-violation — and
// it reaches the sinks only with Options.Probes (--violations-probes),
// with "probe":true.
//
// # Formats
//
// A sink writes one format (ParseFormat; --violations-format): "json", the
// default, is JSON Lines as above; "text" is one human line a record, the
// time then Record.Line; "github" is one GitHub Actions workflow command a
// record. The same denial in text and github:
//
//	2025-03-01T12:00:00.123456789Z file-write deny /home/u/x (rule: allowWrite) pid 12 /usr/bin/touch
//	::warning title=sbx violation (file-write)::file-write deny /home/u/x (rule: allowWrite) pid 12 /usr/bin/touch
//
// In github commands the message is escaped by the Actions rules (% → %25,
// CR → %0D, LF → %0A) and the title property also (: → %3A, , → %2C), so a
// record can neither end its line nor start another command.
//
// Every record is written with a single Write call of a complete line, so
// records appended by several sbx processes to one file never interleave.
//
// # Sinks
//
// FileSink (--violations FILE) appends JSON Lines to a file opened
// O_APPEND|O_CREATE|O_WRONLY|O_CLOEXEC|O_NOFOLLOW: created with mode 0600,
// an existing file's mode left as it is, a symbolic link refused; OpenFile
// with NewSink gives the other formats. FDSink (--violations-fd N) writes
// to a close-on-exec duplicate of an open, writable descriptor and leaves N
// itself open. NewSink wraps any io.WriteCloser. A sink that fails is
// written to no more; its first error is in Summary.SinkErr.
//
// # Summary
//
// Collector.Close returns a Summary: the total, counts by kind, the first
// records, the dropped and ignored counts and any sink error.
// Summary.WriteText prints the short stderr report after the command exits
// — nothing at all for a clean run — as text or as GitHub warnings.
package violations
