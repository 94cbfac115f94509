//go:build linux

package ns

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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
	ctime  int64 // ns since the epoch
	deeper bool  // subs were listed
	info   *dirInfo
}

// scanCache is one writable root's cache while a scan runs.
type scanCache struct {
	dir, file string
	root      string
	sig       uint64
	horizon   int64
	old       map[dirKey]cacheEntry

	mu     sync.Mutex
	cur    map[dirKey]cacheEntry
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
		old:     map[dirKey]cacheEntry{},
		cur:     map[dirKey]cacheEntry{},
	}
	if b, err := readPrivate(filepath.Join(dir, c.file)); err == nil {
		if old, err := decodeCache(b, root, c.sig); err == nil {
			c.old = old
		}
	}
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
		c.cur[k] = cacheEntry{ctime: ct, deeper: deeper, info: d}
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
	e, ok := c.old[k]
	if !ok || e.ctime != ct || (deeper && !e.deeper) {
		return nil
	}
	c.mu.Lock()
	c.cur[k] = e
	c.hits++
	c.mu.Unlock()
	if !deeper && len(e.info.subs) > 0 {
		return &dirInfo{have: e.info.have}
	}
	return e.info
}

// save writes the entries of this scan when it read anything or dropped
// an entry; errors are ignored (the cache is an optimisation).
func (c *scanCache) save() {
	if !c.changed && len(c.cur) == len(c.old) {
		return // nothing new to remember (a directory changed just now is not)
	}
	if len(c.cur) < minCacheDirs {
		if len(c.old) > 0 {
			os.Remove(filepath.Join(c.dir, c.file))
		}
		return
	}
	prune(c.dir)
	tmp, err := os.CreateTemp(c.dir, c.file+".*")
	if err != nil {
		return
	}
	_, err = tmp.Write(encodeCache(c.cur, c.root, c.sig))
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
// the file it opened (not the name).
func readPrivate(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 || st.Size > maxCacheFile {
		return nil, errors.New("untrusted scan cache")
	}
	b := make([]byte, st.Size)
	n, err := f.ReadAt(b, 0)
	if n != len(b) {
		return nil, err
	}
	return b, nil
}

// The file: magic, signature (u64), root (u16 length, bytes), count
// (u32), then per directory: dev, ino (u64), ctime (i64), deeper (u8),
// the protected names it holds (u16 count; type u8, u16 length, bytes)
// and its subdirectories (u32 count; u16 length, bytes). Little-endian.

func encodeCache(m map[dirKey]cacheEntry, root string, sig uint64) []byte {
	le := binary.LittleEndian
	b := append([]byte(cacheMagic), make([]byte, 8)...)
	le.PutUint64(b[len(cacheMagic):], sig)
	str := func(s string) {
		b = le.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	str(root)
	b = le.AppendUint32(b, uint32(len(m)))
	for k, e := range m {
		b = le.AppendUint64(b, k.dev)
		b = le.AppendUint64(b, k.ino)
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

func decodeCache(b []byte, root string, sig uint64) (map[dirKey]cacheEntry, error) {
	le := binary.LittleEndian
	bad := false
	take := func(n int) []byte {
		if bad || n > len(b) {
			bad = true
			return make([]byte, n)
		}
		v := b[:n]
		b = b[n:]
		return v
	}
	str := func() string { return string(take(int(le.Uint16(take(2))))) }
	if string(take(len(cacheMagic))) != cacheMagic || le.Uint64(take(8)) != sig || str() != root || bad {
		return nil, errCache
	}
	n := int(le.Uint32(take(4)))
	m := make(map[dirKey]cacheEntry, min(n, 1<<16))
	for i := 0; i < n && !bad; i++ {
		k := dirKey{le.Uint64(take(8)), le.Uint64(take(8))}
		e := cacheEntry{ctime: int64(le.Uint64(take(8))), deeper: take(1)[0] == 1, info: &dirInfo{}}
		if nh := int(le.Uint16(take(2))); nh > 0 {
			e.info.have = make(map[string]entryType, nh)
			for j := 0; j < nh && !bad; j++ {
				t := entryType(take(1)[0])
				if t > typeSymlink {
					bad = true
				}
				e.info.have[str()] = t
			}
		}
		ns := int(le.Uint32(take(4)))
		for j := 0; j < ns && !bad; j++ {
			e.info.subs = append(e.info.subs, str())
		}
		m[k] = e
	}
	if bad || len(b) != 0 {
		return nil, errCache
	}
	return m, nil
}
