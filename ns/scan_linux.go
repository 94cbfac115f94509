//go:build linux

package ns

import (
	"encoding/binary"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// scanTree reads root and its subdirectories down to depth levels for the
// protected-name search, skipping directories in skip (and what is below
// them). It returns the directories it could read (and those it could
// not, marked blind: see dirInfo) and every directory it tried.
//
// The search runs on every start in trees that can hold thousands of
// directories, so it is cheap per directory: each is opened relative to
// its parent (no full path walk), read with getdents64 into a reused
// buffer, and only the entries the search needs are kept. A few
// goroutines share the work; the result does not depend on the schedule.
func scanTree(root string, depth int, firsts, skip map[string]bool) (map[string]*dirInfo, []string) {
	return scanTreeCached(root, depth, firsts, skip, nil)
}

// scanRoot is scanTree through the scan cache in cacheDir ("": none; see
// scanCache).
func scanRoot(root string, depth int, firsts, skip map[string]bool, cacheDir string) (map[string]*dirInfo, []string) {
	c := openScanCache(cacheDir, root, firsts)
	tree, visited := scanTreeCached(root, depth, firsts, skip, c)
	if c != nil {
		c.save()
	}
	return tree, visited
}

// scanTreeCached is scanTree, reading each directory through c when it
// is not nil.
func scanTreeCached(root string, depth int, firsts, skip map[string]bool, c *scanCache) (map[string]*dirInfo, []string) {
	// A scan through the cache meets about the directories the last
	// one remembered.
	hint := 0
	if c != nil {
		hint = c.old.keys
	}
	tree := make(map[string]*dirInfo, hint)
	if skip[root] {
		return tree, nil
	}
	visited := make([]string, 1, hint+1)
	visited[0] = root
	rootClean := filepath.Clean(root) == root
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if blindErr(err) {
			tree[root] = &dirInfo{blind: true}
		}
		return tree, visited
	}
	type job struct {
		fd    int
		path  string
		level int
	}
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		queue  = []job{{fd, root, 0}}
		active int
		wg     sync.WaitGroup
	)
	workers := min(max(runtime.GOMAXPROCS(0), 1), 4)
	if c != nil && c.old.keys > 0 {
		// Mostly answered from the cache: one fstatat or open a
		// directory, less than the hand-offs between workers cost.
		workers = 1
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 16<<10)
			var kids []job
			var tried, paths []string
			var known, blind []hit
			for {
				mu.Lock()
				for len(queue) == 0 && active > 0 {
					cond.Wait()
				}
				if len(queue) == 0 {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				active++
				mu.Unlock()

				kids, tried, paths, known, blind = kids[:0], tried[:0], paths[:0], known[:0], blind[:0]
				var d *dirInfo
				if c != nil {
					d = c.read(j.fd, j.level < depth, firsts, buf)
				} else {
					d = readDirInfo(j.fd, j.level < depth, firsts, buf)
				}
				if d != nil {
					paths = subPaths(paths, j.path, d.subs, j.level > 0 || rootClean)
					for i, sub := range d.subs {
						p := paths[i]
						if skip[p] {
							continue
						}
						tried = append(tried, p)
						if c != nil {
							// A subdirectory the cache knows and the
							// search need not enter: one fstatat, no open.
							if info := c.peek(j.fd, sub, j.level+1 < depth); info != nil && (j.level+1 >= depth || len(info.subs) == 0) {
								known = append(known, hit{p, info})
								continue
							}
						}
						cfd, err := unix.Openat(j.fd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
						switch {
						case err == nil:
							kids = append(kids, job{cfd, p, j.level + 1})
						case blindErr(err):
							blind = append(blind, hit{p, &dirInfo{blind: true}})
						}
					}
				}
				unix.Close(j.fd)

				mu.Lock()
				if d == nil {
					d = &dirInfo{blind: true} // opened, but not read to the end
				}
				tree[j.path] = d
				for _, h := range known {
					tree[h.path] = h.info
				}
				for _, h := range blind {
					tree[h.path] = h.info
				}
				visited = append(visited, tried...)
				queue = append(queue, kids...)
				active--
				mu.Unlock()
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	return tree, visited
}

// hit is a directory the scan cache answered without opening it.
type hit struct {
	path string
	info *dirInfo
}

// readDirInfo reads the directory open at fd. With deeper set it lists
// its subdirectories too. It returns nil when the directory cannot be
// read to the end.
func readDirInfo(fd int, deeper bool, firsts map[string]bool, buf []byte) *dirInfo {
	d := &dirInfo{}
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil
			}
			dtype := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			want := firsts[string(name)]
			if !want && !deeper || string(name) == "." || string(name) == ".." {
				continue
			}
			if dtype == unix.DT_UNKNOWN {
				// The file system does not say: ask.
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue // gone since
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					dtype = unix.DT_DIR
				case unix.S_IFLNK:
					dtype = unix.DT_LNK
				}
			}
			typ := typeOther
			switch dtype {
			case unix.DT_DIR:
				typ = typeDir
			case unix.DT_LNK:
				typ = typeSymlink
			}
			if want {
				if d.have == nil {
					d.have = map[string]entryType{}
				}
				d.have[string(name)] = typ
			}
			if deeper && typ == typeDir {
				d.subs = append(d.subs, string(name))
			}
		}
	}
	sort.Strings(d.subs)
	return d
}
