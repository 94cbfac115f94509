//go:build linux

package ns

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"hash/maphash"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The protected-name search reads every directory down to the search
// depth on every start; in a home directory with a Go build cache that is
// tens of thousands of entries and most of a start's time. A scan cache
// remembers what the search kept of each directory (the protected first
// names it holds and its subdirectories), keyed by the directory's device
// and inode and valid while the directory's ctime is unchanged: adding,
// removing or renaming an entry sets the ctime to the current time, and
// nothing can set it back (utimes sets mtime, and moves ctime to now). A
// second start in an unchanged tree then does one fstat per directory
// instead of reading it.
//
// Two rules keep it correct:
//
//   - A directory whose ctime is less than cacheMargin old when the scan
//     starts is read but not remembered: a change in the same clock tick
//     as an earlier one may leave the ctime as it was (timestamps are
//     coarse), and only an old ctime guarantees that a later change moves
//     it.
//   - The cache is trusted only in a directory the caller owns and only
//     the caller may write, in files the caller owns and only the caller
//     may write (opened without following links). The sandboxed command
//     runs as the same user, so the policy always denies it writes there
//     (policy.Input.ScanCache): it cannot forge an entry to hide a name it
//     planted.
//
// Each writable root has a file of its own, rewritten (to a temporary
// name, then renamed) only when the scan read something; concurrent runs
// each write a complete file, and the last rename wins.

// cacheMargin is how old a directory's ctime must be for it to be
// remembered (var for tests).
var cacheMargin = 2 * time.Second

// cacheMagic starts a cache file; the digit is the format's version.
const cacheMagic = "sbxscan1"

// maxCacheFile bounds the cache file read (a larger one is ignored).
const maxCacheFile = 64 << 20

type dirKey struct{ dev, ino uint64 }

type cacheEntry struct {
	key    dirKey
	ctime  int64 // ns since the epoch
	deeper bool  // subs were listed
	info   dirInfo
}

// cacheIndex is a cache file's entries, in the file's order, and a hash
// table over them (one allocation, no per-entry work beyond a few
// probes): slots holds, for each key, 1 + the index of its entry, in the
// slot keySlot gives or the next free one after it; 0 is a free slot.
// When the file has a key twice, the later entry is the one found (as
// when the file was decoded into a map), and the earlier one is never
// used. The hash is seeded per process (hash/maphash), as Go's maps are:
// with a fixed hash, a crafted file of keys that all land in one slot
// made decoding quadratic (80k entries took 7 s).
type cacheIndex struct {
	entries []cacheEntry
	slots   []int32 // a power of two long, at most half full
	keys    int     // distinct keys
}

var indexSeed = maphash.MakeSeed()

func (x *cacheIndex) keySlot(k dirKey) int {
	return int(maphash.Comparable(indexSeed, k)>>32) & (len(x.slots) - 1)
}

// find returns the index of the entry with key k, or -1.
func (x *cacheIndex) find(k dirKey) int {
	if len(x.slots) == 0 {
		return -1
	}
	for i := x.keySlot(k); ; i = (i + 1) & (len(x.slots) - 1) {
		s := x.slots[i]
		if s == 0 {
			return -1
		}
		if x.entries[s-1].key == k {
			return int(s - 1)
		}
	}
}

// index makes the table over entries.
func (x *cacheIndex) index() {
	n := 8
	for n < 2*len(x.entries) {
		n *= 2
	}
	x.slots = make([]int32, n)
	for e := range x.entries {
		k := x.entries[e].key
		i := x.keySlot(k)
		for x.slots[i] != 0 && x.entries[x.slots[i]-1].key != k {
			i = (i + 1) & (n - 1)
		}
		if x.slots[i] == 0 {
			x.keys++
		}
		x.slots[i] = int32(e + 1)
	}
}

// scanCache is one writable root's cache while a scan runs.
type scanCache struct {
	dir, file string
	root      string
	sig       uint64
	horizon   int64
	old       cacheIndex

	// The entries for the next file are the old entries kept (those
	// this scan found valid, and did not read and remember again since)
	// and the fresh ones (no key in both): for each directory, what the
	// scan last had of it.
	mu     sync.Mutex
	kept   []bool // by index in old.entries
	fresh  map[dirKey]cacheEntry
	misses int
	hits   int
	// changed: an entry was added or replaced (a directory read and
	// remembered), so the file is worth writing again.
	changed bool
}

// minCacheDirs is the smallest scan worth a cache file: fewer
// directories cost less to read again than a file to keep (var for tests).
var minCacheDirs = 32

// maxCacheFiles bounds the cache directory: past it, save removes the
// files least recently written (roots long gone, or rarely used).
const maxCacheFiles = 256

// openScanCache loads the cache of root in dir for the names in firsts.
// It returns nil when dir is empty or cannot be trusted; an unreadable or
// malformed file is an empty cache.
func openScanCache(dir, root string, firsts map[string]bool) *scanCache {
	if dir == "" || !ownedPrivate(dir, true) {
		return nil
	}
	names := make([]string, 0, len(firsts))
	for n := range firsts {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	f := fnv.New64a()
	f.Write([]byte(root))
	c := &scanCache{
		dir:     dir,
		file:    "scan-" + strconv.FormatUint(f.Sum64(), 16),
		root:    root,
		sig:     h.Sum64(),
		horizon: time.Now().Add(-cacheMargin).UnixNano(),
	}
	if b, err := readPrivate(filepath.Join(dir, c.file)); err == nil {
		c.old, _ = decodeCache(b, root, c.sig)
	}
	c.kept = make([]bool, len(c.old.entries))
	return c
}

// read is readDirInfo through the cache.
func (c *scanCache) read(fd int, deeper bool, firsts map[string]bool, buf []byte) *dirInfo {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		c.mu.Lock()
		c.misses++
		c.mu.Unlock()
		return readDirInfo(fd, deeper, firsts, buf)
	}
	k := dirKey{uint64(st.Dev), st.Ino}
	ct := st.Ctim.Nano()
	if d := c.lookup(k, ct, deeper); d != nil {
		return d
	}
	d := readDirInfo(fd, deeper, firsts, buf)
	c.mu.Lock()
	c.misses++
	if d != nil && ct < c.horizon {
		if c.fresh == nil {
			c.fresh = map[dirKey]cacheEntry{}
		}
		c.fresh[k] = cacheEntry{key: k, ctime: ct, deeper: deeper, info: *d}
		if i := c.old.find(k); i >= 0 {
			c.kept[i] = false
		}
		c.changed = true
	}
	c.mu.Unlock()
	return d
}

// peek answers for the subdirectory name of the directory open at dirfd
// from the cache, with one fstatat and without opening it: nil when the
// cache does not know it as it is now (or it is not a directory).
func (c *scanCache) peek(dirfd int, name string, deeper bool) *dirInfo {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return c.lookup(dirKey{uint64(st.Dev), st.Ino}, st.Ctim.Nano(), deeper)
}

// lookup is the cache's answer for directory k with ctime ct (nil: none
// valid), counted as a hit and kept for the next file. Without deeper the
// subdirectory list is left out, as readDirInfo leaves it out.
func (c *scanCache) lookup(k dirKey, ct int64, deeper bool) *dirInfo {
	i := c.old.find(k)
	if i < 0 {
		return nil
	}
	e := &c.old.entries[i]
	if e.ctime != ct || (deeper && !e.deeper) {
		return nil
	}
	c.mu.Lock()
	c.kept[i] = true
	if len(c.fresh) > 0 {
		delete(c.fresh, k)
	}
	c.hits++
	c.mu.Unlock()
	if !deeper && len(e.info.subs) > 0 {
		return &dirInfo{have: e.info.have}
	}
	return &e.info
}

// save writes the entries of this scan when it read anything or dropped
// an entry; errors are ignored (the cache is an optimisation).
func (c *scanCache) save() {
	kept := 0
	for _, k := range c.kept {
		if k {
			kept++
		}
	}
	if !c.changed && kept == c.old.keys {
		return // nothing new to remember (a directory changed just now is not)
	}
	if kept+len(c.fresh) < minCacheDirs {
		if len(c.old.entries) > 0 {
			os.Remove(filepath.Join(c.dir, c.file))
		}
		return
	}
	cur := make([]cacheEntry, 0, kept+len(c.fresh))
	for i, e := range c.old.entries {
		if c.kept[i] {
			cur = append(cur, e)
		}
	}
	for _, e := range c.fresh {
		cur = append(cur, e)
	}
	prune(c.dir)
	tmp, err := os.CreateTemp(c.dir, c.file+".*")
	if err != nil {
		return
	}
	_, err = tmp.Write(encodeCache(cur, c.root, c.sig))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(c.dir, c.file))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

// prune keeps the cache directory under maxCacheFiles files, removing the
// least recently written first.
func prune(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) < maxCacheFiles {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var files []aged
	for _, e := range ents {
		if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "scan-") {
			files = append(files, aged{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	for _, f := range files[:max(0, len(files)-maxCacheFiles*3/4)] {
		os.Remove(filepath.Join(dir, f.name))
	}
}

// ownedPrivate says whether path is (dir: a directory, else a regular
// file) owned by the caller and writable by nobody else, without
// following a final symlink.
func ownedPrivate(path string, dir bool) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return false
	}
	want := uint32(unix.S_IFREG)
	if dir {
		want = unix.S_IFDIR
	}
	return st.Mode&unix.S_IFMT == want && int(st.Uid) == os.Geteuid() && st.Mode&0o022 == 0
}

// readPrivate reads a cache file that ownedPrivate would accept, checking
// the file it opened (not the name). The file comes back as a string,
// without a copy: nothing else holds the bytes it was read into, and the
// names decodeCache takes from it are substrings of it.
func readPrivate(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 || st.Size > maxCacheFile {
		return "", errors.New("untrusted scan cache")
	}
	if st.Size == 0 {
		return "", nil
	}
	b := make([]byte, st.Size)
	for off := 0; off < len(b); {
		n, err := unix.Pread(fd, b[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", errors.New("scan cache cut short")
		}
		off += n
	}
	return unsafe.String(&b[0], len(b)), nil
}

// The file: magic, signature (u64), root (u16 length, bytes), count
// (u32), then per directory: dev, ino (u64), ctime (i64), deeper (u8),
// the protected names it holds (u16 count; type u8, u16 length, bytes)
// and its subdirectories (u32 count; u16 length, bytes). Little-endian.

func encodeCache(ents []cacheEntry, root string, sig uint64) []byte {
	le := binary.LittleEndian
	b := append([]byte(cacheMagic), make([]byte, 8)...)
	le.PutUint64(b[len(cacheMagic):], sig)
	str := func(s string) {
		b = le.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	str(root)
	b = le.AppendUint32(b, uint32(len(ents)))
	for _, e := range ents {
		b = le.AppendUint64(b, e.key.dev)
		b = le.AppendUint64(b, e.key.ino)
		b = le.AppendUint64(b, uint64(e.ctime))
		deeper := byte(0)
		if e.deeper {
			deeper = 1
		}
		b = append(b, deeper)
		b = le.AppendUint16(b, uint16(len(e.info.have)))
		for n, t := range e.info.have {
			b = append(b, byte(t))
			str(n)
		}
		b = le.AppendUint32(b, uint32(len(e.info.subs)))
		for _, s := range e.info.subs {
			str(s)
		}
	}
	return b
}

var errCache = errors.New("malformed scan cache")

// The smallest encodings, which bound the counts a file can hold before
// anything is allocated for them: a directory with no names and no
// subdirectories, a protected name, a subdirectory.
const minEntry, minHave, minSub = 8 + 8 + 8 + 1 + 2 + 4, 1 + 2, 2

// cacheReader reads the file's fields in order; past the end (or after
// any error) it is bad and returns zeros.
type cacheReader struct {
	s   string
	off int
	bad bool
}

// next moves past the n bytes of the next field and returns where they
// start, or -1 when they are not all there.
func (r *cacheReader) next(n int) int {
	if r.bad || n > len(r.s)-r.off {
		r.bad = true
		return -1
	}
	i := r.off
	r.off += n
	return i
}

func (r *cacheReader) left() int { return len(r.s) - r.off }

// The integers are little-endian, read as binary.LittleEndian reads
// them (which the compiler turns into single loads).

func (r *cacheReader) u8() byte {
	if i := r.next(1); i >= 0 {
		return r.s[i]
	}
	return 0
}

func (r *cacheReader) u16() uint16 {
	if i := r.next(2); i >= 0 {
		b := r.s[i : i+2]
		return uint16(b[0]) | uint16(b[1])<<8
	}
	return 0
}

func (r *cacheReader) u32() uint32 {
	if i := r.next(4); i >= 0 {
		b := r.s[i : i+4]
		return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	return 0
}

func (r *cacheReader) u64() uint64 {
	if i := r.next(8); i >= 0 {
		b := r.s[i : i+8]
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	}
	return 0
}

func (r *cacheReader) str() string {
	n := int(r.u16())
	if i := r.next(n); i >= 0 {
		return r.s[i : i+n]
	}
	return ""
}

// decodeCache decodes a whole cache file made for root and the name set
// sig. The names in its entries are substrings of b, and the entries are
// allocated together, sized by the counts once the file is known to be
// large enough to hold them.
func decodeCache(b string, root string, sig uint64) (cacheIndex, error) {
	r := cacheReader{s: b}
	if r.next(len(cacheMagic)) < 0 || r.s[:len(cacheMagic)] != cacheMagic || r.u64() != sig || r.str() != root || r.bad {
		return cacheIndex{}, errCache
	}
	n := int(r.u32())
	if r.bad || n > r.left()/minEntry {
		return cacheIndex{}, errCache
	}
	ents := make([]cacheEntry, n)
	// The subdirectory lists lie end to end in subs, each capped so that
	// an append to one cannot write into the next. Most directories are
	// listed in their parent's entry: the entries left are a fair guess
	// at the subdirectories left.
	var subs []string
	for i := 0; i < n && !r.bad; i++ {
		e := &ents[i]
		e.key = dirKey{r.u64(), r.u64()}
		e.ctime = int64(r.u64())
		e.deeper = r.u8() == 1
		if nh := int(r.u16()); nh > 0 {
			if nh > r.left()/minHave {
				return cacheIndex{}, errCache
			}
			e.info.have = make(map[string]entryType, nh)
			for j := 0; j < nh && !r.bad; j++ {
				t := entryType(r.u8())
				if t > typeSymlink {
					r.bad = true
				}
				e.info.have[r.str()] = t
			}
		}
		if ns := int(r.u32()); ns > 0 && !r.bad {
			if ns > r.left()/minSub {
				return cacheIndex{}, errCache
			}
			if cap(subs)-len(subs) < ns {
				subs = make([]string, 0, max(ns, n-i))
			}
			start := len(subs)
			for j := 0; j < ns && !r.bad; j++ {
				subs = append(subs, r.str())
			}
			e.info.subs = subs[start:len(subs):len(subs)]
		}
	}
	if r.bad || r.left() != 0 {
		return cacheIndex{}, errCache
	}
	x := cacheIndex{entries: ents}
	x.index()
	return x, nil
}
