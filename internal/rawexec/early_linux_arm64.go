//go:build linux && arm64

package rawexec

import (
	"errors"
	"syscall"
	"unsafe"
)

// An Early is a first process cloned before its Program exists. On arm64
// there is none yet (its clone needs an assembly entry point, written
// and tested for amd64 only): Prespawn fails and Start clones as usual.
type Early struct{}

var errNoEarly = errors.New("rawexec: no early process on this architecture")

// Prespawn returns an error on arm64: see Early.
func Prespawn(*Attr, *Program) (*Early, error) { return nil, errNoEarly }

// Abandon does nothing on arm64.
func (e *Early) Abandon() {}

func (e *Early) matches(*Attr) bool { return false }

func (e *Early) ready() bool { return false }

func (e *Early) finish() {}

// Call returns an error on arm64 (there is no early process).
func (e *Early) Call(func(unsafe.Pointer), unsafe.Pointer) error { return errNoEarly }

// reaperVfork is never called on arm64 (reaper.vstack stays 0).
func reaperVfork(*reaper, uintptr, *[numSlots]uintptr) (uintptr, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (e *Early) start(*launch, uintptr, uintptr, func()) (uintptr, int32, error) {
	return 0, -1, errNoEarly
}
