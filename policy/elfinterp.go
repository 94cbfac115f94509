package policy

import (
	"bytes"
	"encoding/binary"
	"io"
)

// elfInterp returns the dynamic loader an ELF program names (its PT_INTERP
// segment), or "" for a static program and for anything that is not an
// ELF file with sound program headers. It reads what the kernel reads to
// exec the program, the file header and the program headers, and no
// more: debug/elf would do the same, but links DWARF and zlib/zstd
// decompression into sbx, whose package initialisation every start pays
// for (docs/benchmarks.md).
func elfInterp(f io.ReaderAt) string {
	var h [64]byte
	if n, _ := f.ReadAt(h[:], 0); n < 52 || string(h[:4]) != "\x7fELF" {
		return ""
	}
	var bo binary.ByteOrder
	switch h[5] { // EI_DATA
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return ""
	}
	var (
		phoff            uint64
		phentsize, phnum uint16
		n                int // bytes of a program header that are read: Elf32_Phdr or Elf64_Phdr
	)
	switch h[4] { // EI_CLASS
	case 1:
		phoff, phentsize, phnum, n = uint64(bo.Uint32(h[28:])), bo.Uint16(h[42:]), bo.Uint16(h[44:]), 32
	case 2:
		phoff, phentsize, phnum, n = bo.Uint64(h[32:]), bo.Uint16(h[54:]), bo.Uint16(h[56:]), 56
	default:
		return ""
	}
	if int(phentsize) < n {
		return ""
	}
	is64 := n == 56
	for i := range uint64(phnum) {
		var p [56]byte
		off := phoff + i*uint64(phentsize)
		if off < phoff || off > 1<<40 {
			return ""
		}
		if m, _ := f.ReadAt(p[:n], int64(off)); m < n {
			return ""
		}
		if bo.Uint32(p[0:]) != 3 { // PT_INTERP
			continue
		}
		var offset, size uint64
		if is64 {
			offset, size = bo.Uint64(p[8:]), bo.Uint64(p[32:])
		} else {
			offset, size = uint64(bo.Uint32(p[4:])), uint64(bo.Uint32(p[16:]))
		}
		if size == 0 || size > 4096 || offset > 1<<40 {
			return ""
		}
		b := make([]byte, size)
		if m, _ := f.ReadAt(b, int64(offset)); uint64(m) < size {
			return ""
		}
		return string(bytes.TrimRight(b, "\x00"))
	}
	return ""
}
