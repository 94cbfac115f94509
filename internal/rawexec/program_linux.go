//go:build linux && (amd64 || arm64)

package rawexec

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Limits of a Program. The child keeps its slots in a fixed array on its
// nosplit stack, so their number is small. Ops live in the parent's heap
// (the child reads its copy-on-write copy of them), so a Program grows with
// its plan: MaxOps only keeps a runaway builder (and the report's 32-bit
// index) sane. It is far beyond any plan a kernel takes: a mount view of
// that size would be over the kernel's fs.mount-max (100,000 by default)
// long before.
const (
	// MaxSlots is how many slots a Program may allocate.
	MaxSlots = numSlots - 1 // the last slot is the scratch slot of helpers and Start
	// MaxOps is how many ops a Program may hold, not counting the ones
	// Start adds (id maps, descriptor layout, execve).
	MaxOps = 1 << 22
	// MaxIgnore is how many distinct errnos one op may ignore.
	MaxIgnore = 3
)

const (
	numSlots    = 16 // a power of two: slot indexes are masked in the child
	slotMask    = numSlots - 1
	scratchSlot = numSlots - 1
	maxTotalOps = MaxOps + 1024 // plus Start's own ops (the descriptor layout grows with Files)
)

// opLimit is MaxOps; a test lowers it.
var opLimit = MaxOps

// op flags
const (
	flagWant      = 1 << iota // result must equal want
	flagIgnoreAll             // any errno is ignored
	flagStore                 // not a syscall: *(*int32)(dst) = slots[args[0]]
	flagCmp                   // not a syscall: skip skipOK ops if *(*uint64)(dst) != want
	flagFork                  // not a syscall: the Program's Fork point
)

// op is one step of the child's program. It is read, never written, by the
// child, and holds no Go pointers except dst (a pointer-free int32 the
// child writes through; no write barrier is involved).
type op struct {
	nr     uintptr
	args   [6]uintptr
	want   uintptr
	dst    unsafe.Pointer
	ignore [MaxIgnore]uint16 // errnos treated as success; 0 = unused
	ref    uint8             // bit i: args[i] is a slot index
	save   uint8             // 0: discard result; n: save it in slot n-1
	flags  uint8
	skipOK uint8 // ops to skip after a success
	skipIg uint8 // ops to skip after an ignored failure
}

// ErrResult is wrapped by an [OpError] whose op succeeded but returned a
// result other than the one required with [Call.Want].
var ErrResult = errors.New("unexpected result")

// ErrTooLong is wrapped by [Program.Err] when the Program would hold more
// than [MaxOps] ops.
var ErrTooLong = fmt.Errorf("rawexec: more than %d ops", MaxOps)

// A Program is a flat list of system calls built in the parent and run by
// the child of [Start] before execve. The zero value is an empty program
// ready to use. Building methods do not return errors; the first error is
// kept and returned by [Program.Err] (and by Start), after which further
// appends are ignored.
//
// A Program is not modified by Start (the child's stores go to its own
// copy of memory), so it may be started any number of times, but it must
// not be appended to while a Start using it is running.
type Program struct {
	ops    []op
	labels []string
	keep   []any // every buffer an op points into
	nslots int
	fork   int // index+1 of the Fork op, 0 if none
	err    error
}

// A Slot is a register of the child that an op's result is saved into and
// later ops read as an argument. The zero Slot is invalid.
type Slot struct{ n uint8 } // index + 1

// An Arg is one argument of a system call: an [Imm], the result of [Int],
// [Bytes], [String] or [Ptr], or a [Slot].
type Arg interface {
	resolve(p *Program) (v uintptr, isSlot bool)
}

// Imm is an immediate argument, passed as is.
type Imm uintptr

// Int returns a signed immediate, such as unix.AT_FDCWD.
func Int(v int) Imm { return Imm(uintptr(v)) }

// Bytes returns a pointer to b's first byte (0 for an empty b). The buffer
// belongs to the parent; the Program keeps it alive. Ops that make the
// kernel write into it (read, readlink) write the child's copy.
func Bytes(b []byte) Arg { return bytesArg{b} }

// String returns a pointer to a NUL-terminated copy of s. A NUL inside s
// is a build error.
func String(s string) Arg { return stringArg(s) }

// Ptr returns a pointer to a parent-owned value, such as a
// unix.SockFprog; the Program keeps v (and so everything v points to)
// alive.
func Ptr[T any](v *T) Arg { return ptrArg{unsafe.Pointer(v), v} }

type bytesArg struct{ b []byte }
type stringArg string
type ptrArg struct {
	p    unsafe.Pointer
	keep any
}

func (a Imm) resolve(*Program) (uintptr, bool) { return uintptr(a), false }

func (a bytesArg) resolve(p *Program) (uintptr, bool) {
	if len(a.b) == 0 {
		return 0, false
	}
	p.keep = append(p.keep, a.b)
	return uintptr(unsafe.Pointer(&a.b[0])), false
}

func (a stringArg) resolve(p *Program) (uintptr, bool) {
	b, err := syscall.BytePtrFromString(string(a))
	if err != nil {
		p.fail(fmt.Errorf("rawexec: string argument %q contains NUL", string(a)))
		return 0, false
	}
	p.keep = append(p.keep, b)
	return uintptr(unsafe.Pointer(b)), false
}

func (a ptrArg) resolve(p *Program) (uintptr, bool) {
	p.keep = append(p.keep, a.keep)
	return uintptr(a.p), false
}

func (s Slot) resolve(p *Program) (uintptr, bool) {
	if s.n == 0 || int(s.n) > numSlots {
		p.fail(errors.New("rawexec: invalid slot"))
		return 0, false
	}
	return uintptr(s.n - 1), true
}

// A Call refines the op just appended by [Program.Syscall]. Its methods
// return the Call, so they chain.
type Call struct {
	p *Program
	i int // -1 once the program has failed
}

func (p *Program) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Grow makes room for n more ops, so that building a long Program does
// not copy its list over and over (sbx's default plan is about 850 ops:
// four for each of ~200 Landlock rules). Small Programs need not call it:
// every page of a list reserved and not used is a page fault.
func (p *Program) Grow(n int) {
	if n > 0 {
		p.ops = slices.Grow(p.ops, n)
		p.labels = slices.Grow(p.labels, n)
	}
}

// Err returns the first error met while building, if any.
func (p *Program) Err() error { return p.err }

// Len returns the number of ops.
func (p *Program) Len() int { return len(p.ops) }

// Label returns the label of op i.
func (p *Program) Label(i int) string { return p.labels[i] }

func (p *Program) add(label string, o op) Call {
	if p.err != nil {
		return Call{p, -1}
	}
	if len(p.ops) >= opLimit {
		p.fail(fmt.Errorf("%w (at %q)", ErrTooLong, label))
		return Call{p, -1}
	}
	p.ops = append(p.ops, o)
	p.labels = append(p.labels, label)
	return Call{p, len(p.ops) - 1}
}

// Syscall appends the system call nr (a unix.SYS_* constant) with up to
// six arguments; missing ones are zero. By default any error makes the
// child report this op and exit without exec'ing.
func (p *Program) Syscall(label string, nr uintptr, args ...Arg) Call {
	if p.err != nil {
		return Call{p, -1}
	}
	if len(args) > 6 {
		p.fail(fmt.Errorf("rawexec: op %q: %d arguments, at most 6", label, len(args)))
		return Call{p, -1}
	}
	o := op{nr: nr}
	for i, a := range args {
		if a == nil {
			p.fail(fmt.Errorf("rawexec: op %q: nil argument %d", label, i))
			return Call{p, -1}
		}
		v, isSlot := a.resolve(p)
		o.args[i] = v
		if isSlot {
			o.ref |= 1 << i
		}
	}
	return p.add(label, o)
}

// NewSlot allocates a slot, for [Call.SaveTo].
func (p *Program) NewSlot() Slot {
	if p.err != nil {
		return Slot{}
	}
	if p.nslots >= MaxSlots {
		p.fail(fmt.Errorf("rawexec: more than %d slots", MaxSlots))
		return Slot{}
	}
	p.nslots++
	return Slot{uint8(p.nslots)}
}

// Save saves the call's result in a newly allocated slot and returns it.
// A failure the op ignores saves ^uintptr(0) (-1).
func (c Call) Save() Slot {
	s := c.p.NewSlot()
	c.SaveTo(s)
	return s
}

// SaveTo saves the call's result in s, an existing slot (slots may be
// reused once their value is no longer needed).
func (c Call) SaveTo(s Slot) Call {
	if c.i < 0 {
		return c
	}
	if s.n == 0 || int(s.n) > numSlots {
		c.p.fail(fmt.Errorf("rawexec: op %q: invalid slot", c.p.labels[c.i]))
		return c
	}
	c.p.ops[c.i].save = s.n
	return c
}

// Ignore makes the given errnos count as success (the op's result is then
// -1). Without arguments every errno is ignored.
func (c Call) Ignore(errnos ...unix.Errno) Call {
	if c.i < 0 {
		return c
	}
	o := &c.p.ops[c.i]
	if len(errnos) == 0 {
		o.flags |= flagIgnoreAll
		return c
	}
	n := 0
	for n < MaxIgnore && o.ignore[n] != 0 {
		n++
	}
	for _, e := range errnos {
		if e == 0 || e > 0xffff {
			c.p.fail(fmt.Errorf("rawexec: op %q: cannot ignore errno %d", c.p.labels[c.i], int(e)))
			return c
		}
		if n == MaxIgnore {
			c.p.fail(fmt.Errorf("rawexec: op %q: more than %d ignored errnos", c.p.labels[c.i], MaxIgnore))
			return c
		}
		o.ignore[n] = uint16(e)
		n++
	}
	return c
}

// Want requires the call to return exactly r, e.g. a write of all its
// bytes; any other result fails the op with an [OpError] wrapping
// [ErrResult].
func (c Call) Want(r uintptr) Call {
	if c.i < 0 {
		return c
	}
	c.p.ops[c.i].flags |= flagWant
	c.p.ops[c.i].want = r
	return c
}

// SkipIfOK makes the child skip the next n ops when this one succeeds,
// and SkipIfIgnored when it fails with an errno it ignores. Together they
// express a fallback without branches in the child, e.g. sbx's "load a
// filter with a listener, or on EBUSY a plain one":
//
//	l := p.Syscall("seccomp with listener", ...).Ignore(unix.EBUSY).SkipIfIgnored(3).Save()
//	p.StoreAt("listener fd", cmsg, off, l)
//	p.Syscall("send listener", unix.SYS_SENDMSG, ...)
//	p.Syscall("close listener", unix.SYS_CLOSE, l).SkipIfOK(1)
//	p.Syscall("seccomp plain", ...)
//
// Skips stay inside the Program (Start checks); n is at most 255.
func (c Call) SkipIfOK(n int) Call { return c.skip(n, false) }

// SkipIfIgnored: see [Call.SkipIfOK].
func (c Call) SkipIfIgnored(n int) Call { return c.skip(n, true) }

func (c Call) skip(n int, ignored bool) Call {
	if c.i < 0 {
		return c
	}
	if n < 0 || n > 255 {
		c.p.fail(fmt.Errorf("rawexec: op %q: cannot skip %d ops", c.p.labels[c.i], n))
		return c
	}
	if ignored {
		c.p.ops[c.i].skipIg = uint8(n)
	} else {
		c.p.ops[c.i].skipOK = uint8(n)
	}
	return c
}

// Store appends an op that writes the low 32 bits of slot s to *dst, in
// the child's copy of memory. dst must point into a pointer-free value
// that later ops pass to the kernel, such as the Parent_fd field of a
// unix.LandlockPathBeneathAttr given with [Ptr]; the Program keeps it
// alive.
func (p *Program) Store(label string, dst *int32, s Slot) {
	if dst == nil {
		p.fail(fmt.Errorf("rawexec: op %q: nil destination", label))
		return
	}
	v, _ := s.resolve(p)
	if p.err != nil {
		return
	}
	p.keep = append(p.keep, dst)
	p.add(label, op{flags: flagStore, dst: unsafe.Pointer(dst), args: [6]uintptr{v}})
}

// bufAt is &buf[off] for an op that reads or writes size bytes there,
// or nil after failing the Program when they are not inside buf or not
// size-aligned.
func (p *Program) bufAt(label string, buf []byte, off, size int) unsafe.Pointer {
	if off < 0 || off+size > len(buf) {
		p.fail(fmt.Errorf("rawexec: op %q: offset %d outside a %d-byte buffer", label, off, len(buf)))
		return nil
	}
	ptr := unsafe.Pointer(&buf[off])
	if uintptr(ptr)%uintptr(size) != 0 {
		p.fail(fmt.Errorf("rawexec: op %q: offset %d is not %d-byte aligned", label, off, size))
		return nil
	}
	return ptr
}

// StoreAt is [Store] into buf[off:off+4], which must be 4-byte aligned:
// e.g. the descriptor in an SCM_RIGHTS control message passed with
// [Bytes].
func (p *Program) StoreAt(label string, buf []byte, off int, s Slot) {
	ptr := p.bufAt(label, buf, off, 4)
	if ptr == nil {
		return
	}
	p.keep = append(p.keep, buf)
	p.Store(label, (*int32)(ptr), s)
}

// WriteFile appends ops that write data to the existing file at path
// (open, one write that must write everything, close), like writing a
// sysctl or a cgroup file. They use the scratch slot, not one of the
// Program's.
func (p *Program) WriteFile(label, path string, data []byte) {
	p.fileOps([3]string{label + ": open", label + ": write", label + ": close"}, path, unix.O_WRONLY, 0, data)
}

// CreateFile appends ops that make the file at path hold data (created
// with mode if missing, truncated if not; no write for empty data), all
// labelled label. Like WriteFile they use the scratch slot.
func (p *Program) CreateFile(label, path string, data []byte, mode uint32) {
	p.fileOps([3]string{label, label, label}, path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, mode, data)
}

// fileOps are open (with flags and mode), one write that must write all
// of data, and close, labelled by labels.
func (p *Program) fileOps(labels [3]string, path string, flags int, mode uint32, data []byte) {
	scratch := Slot{scratchSlot + 1}
	p.Syscall(labels[0], unix.SYS_OPENAT, Int(unix.AT_FDCWD), String(path),
		Imm(flags|unix.O_CLOEXEC), Imm(mode)).SaveTo(scratch)
	if len(data) > 0 {
		p.Syscall(labels[1], unix.SYS_WRITE, scratch, Bytes(data), Imm(len(data))).Want(uintptr(len(data)))
	}
	p.Syscall(labels[2], unix.SYS_CLOSE, scratch)
}

// Fork splits the program. Ops before it run in the first process (PID 1
// of a new pid namespace). Fork clones a child (SIGCHLD only, no new
// namespaces); the child runs the ops after Fork, then Start's descriptor
// layout and execve(Attr.Path). The first process never runs the ops after
// Fork: it becomes the reaper described by Attr.Reaper. At most one Fork;
// Start refuses a Program with Fork but no Attr.Reaper, or a Reaper without
// Fork. No skip may jump over the Fork op.
//
// If setting up the fork fails in the first process (blocking the
// signals, signalfd4, clone), the error names the Fork op.
func (p *Program) Fork(label string) {
	if p.err != nil {
		return
	}
	if p.fork != 0 {
		p.fail(fmt.Errorf("rawexec: op %q: a second Fork (the first is op %d)", label, p.fork-1))
		return
	}
	if c := p.add(label, op{flags: flagFork}); c.i >= 0 {
		p.fork = c.i + 1
	}
}

// SkipIfNotEqual compares the uint64 at buf[off:off+8] (native endian; off
// 8-aligned; buf typically filled by an earlier op in the child, e.g. a
// struct stat) with want, and skips the next n ops when they differ. It
// makes no system call and cannot fail; n is at most 255 and, as for
// [Call.SkipIfOK], the skip stays inside the Program.
func (p *Program) SkipIfNotEqual(label string, buf []byte, off int, want uint64, n int) {
	if p.err != nil {
		return
	}
	ptr := p.bufAt(label, buf, off, 8)
	if ptr == nil {
		return
	}
	if n < 0 || n > 255 {
		p.fail(fmt.Errorf("rawexec: op %q: cannot skip %d ops", label, n))
		return
	}
	p.keep = append(p.keep, buf)
	p.add(label, op{flags: flagCmp, dst: ptr, want: uintptr(want), skipOK: uint8(n)})
}
