//go:build linux

package ns

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

var cacheFirsts = map[string]bool{".git": true, ".bashrc": true, ".vscode": true, ".idea": true, ".claude": true}

// cachedScan is scanRoot, returning the cache's counters too.
func cachedScan(t *testing.T, dir, root string, depth int) (map[string]*dirInfo, int, int) {
	t.Helper()
	c := openScanCache(dir, root, cacheFirsts)
	if c == nil {
		t.Fatalf("cache %s not trusted", dir)
	}
	tree, _ := scanTreeCached(root, depth, cacheFirsts, nil, c)
	c.save()
	return tree, c.hits, c.misses
}

func cacheTree(t *testing.T) (root, cache string) {
	t.Helper()
	base := t.TempDir()
	root, cache = filepath.Join(base, "tree"), filepath.Join(base, "cache")
	for _, d := range []string{"a/b/c/d", "a/x", "e/f", "e/.git/hooks", "g"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a", ".bashrc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	return root, cache
}

// smallCache lets the tests' small trees have cache files.
func smallCache(t *testing.T) {
	old, oldMin := cacheMargin, minCacheDirs
	cacheMargin = 0 // remember directories however new (the tests wait out the clock tick instead)
	minCacheDirs = 1
	t.Cleanup(func() { cacheMargin, minCacheDirs = old, oldMin })
}

func TestScanCacheFollowsChanges(t *testing.T) {
	smallCache(t)
	root, cache := cacheTree(t)
	tick := func() { time.Sleep(30 * time.Millisecond) } // past a coarse timestamp's granularity
	tick()

	check := func(step string, wantHits bool) {
		t.Helper()
		got, hits, misses := cachedScan(t, cache, root, 3)
		want, _ := scanReadDir(root, 3, cacheFirsts, nil)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the cached scan differs from a plain read:\n got %v\nwant %v", step, got, want)
		}
		if wantHits && hits == 0 {
			t.Fatalf("%s: nothing came from the cache (misses %d)", step, misses)
		}
		tick()
	}
	check("first scan", false)
	_, hits, misses := cachedScan(t, cache, root, 3)
	if misses != 0 || hits == 0 {
		t.Fatalf("an unchanged tree: %d hits, %d misses; want every directory from the cache", hits, misses)
	}
	// Each change below must be seen although every other directory
	// comes from the cache.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b", ".git", "hooks"), 0o755))
	check("a .git made in a cached directory", true)
	must(os.Remove(filepath.Join(root, "a", ".bashrc")))
	must(os.Mkdir(filepath.Join(root, "a", ".bashrc"), 0o755))
	check("a file replaced by a directory", true)
	must(os.Rename(filepath.Join(root, "e", ".git"), filepath.Join(root, "g", ".git")))
	check("a .git moved to another directory", true)
	must(os.Symlink("/etc", filepath.Join(root, "a", "x", ".vscode")))
	check("a symlink made", true)
	// a/b/c is at the search depth: the cache answers for it without
	// opening it (peek), and must still see a change.
	must(os.Mkdir(filepath.Join(root, "a", "b", "c", ".idea"), 0o755))
	check("a name made in a directory at the search depth", true)
	// A deeper search needs the subdirectory lists a shallower one did
	// not keep.
	got, _, _ := cachedScan(t, cache, root, 1)
	want, _ := scanReadDir(root, 1, cacheFirsts, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("depth 1 after depth 3:\n got %v\nwant %v", got, want)
	}
	got, _, _ = cachedScan(t, cache, root, 3)
	want, _ = scanReadDir(root, 3, cacheFirsts, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("depth 3 after depth 1:\n got %v\nwant %v", got, want)
	}
}

func TestScanCacheSkipsNewDirectories(t *testing.T) {
	// With the real margin, directories changed just now are read and
	// never remembered: a change later in the same clock tick could
	// leave their ctime as it was.
	oldMin := minCacheDirs
	minCacheDirs = 1
	defer func() { minCacheDirs = oldMin }()
	root, cache := cacheTree(t)
	cachedScan(t, cache, root, 3)
	if _, hits, _ := cachedScan(t, cache, root, 3); hits != 0 {
		t.Fatalf("%d directories changed within the margin came from the cache", hits)
	}
}

func TestScanCacheTrust(t *testing.T) {
	smallCache(t)
	root, cache := cacheTree(t)
	time.Sleep(30 * time.Millisecond)
	cachedScan(t, cache, root, 3)
	files, _ := filepath.Glob(filepath.Join(cache, "scan-*"))
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}
	file := files[0]
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode: %v %v", st.Mode(), err)
	}
	hitsNow := func() int {
		c := openScanCache(cache, root, cacheFirsts)
		if c == nil {
			return -1
		}
		_, _ = scanTreeCached(root, 3, cacheFirsts, nil, c)
		return c.hits
	}
	if hitsNow() <= 0 {
		t.Fatal("the cache is not used")
	}
	// A file others may write is not trusted.
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if h := hitsNow(); h != 0 {
		t.Fatalf("a world-writable cache file was used (%d hits)", h)
	}
	os.Chmod(file, 0o600)
	// Nor a symlink to a cache file.
	b, _ := os.ReadFile(file)
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(other, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(file)
	if err := os.Symlink(other, file); err != nil {
		t.Fatal(err)
	}
	if h := hitsNow(); h != 0 {
		t.Fatalf("a symlinked cache file was used (%d hits)", h)
	}
	os.Remove(file)
	// Nor a directory others may write.
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(cache, 0o777)
	if openScanCache(cache, root, cacheFirsts) != nil {
		t.Fatal("a world-writable cache directory was used")
	}
	os.Chmod(cache, 0o700)
	// Another name set, or another root, does not use these entries.
	c := openScanCache(cache, root, map[string]bool{".git": true})
	if c == nil || len(c.old.entries) != 0 {
		t.Fatal("entries made for another set of names were loaded")
	}
	// Every truncation of a valid file is refused, never a panic.
	sig := openScanCache(cache, root, cacheFirsts).sig
	if _, err := decodeCache(string(b), root, sig); err != nil {
		t.Fatalf("the file itself: %v", err)
	}
	for n := 0; n < len(b); n++ {
		if _, err := decodeCache(string(b[:n]), root, sig); err == nil {
			t.Fatalf("a file cut at %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := decodeCache(string(b)+"\x00", root, sig); err == nil {
		t.Fatal("a file with trailing bytes decoded")
	}
	if _, err := decodeCache(string(b), "/elsewhere", sig); err == nil {
		t.Fatal("a file made for another root decoded")
	}
}

func FuzzDecodeCache(f *testing.F) {
	e := []cacheEntry{{key: dirKey{1, 2}, ctime: 3, deeper: true, info: dirInfo{have: map[string]entryType{".git": typeDir}, subs: []string{"a", "b"}}}}
	f.Add(encodeCache(e, "/r", 7))
	// Several entries, one key twice.
	e = append(e, cacheEntry{key: dirKey{1, 3}, ctime: 4}, cacheEntry{key: dirKey{1, 2}, ctime: 5, info: dirInfo{subs: []string{"c"}}})
	f.Add(encodeCache(e, "/r", 7))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decodeCache(string(b), "/r", 7)
		if err == nil {
			// What decodes encodes back to something that decodes the same.
			x2, err := decodeCache(string(encodeCache(x.entries, "/r", 7)), "/r", 7)
			if err != nil || !reflect.DeepEqual(x, x2) {
				t.Fatalf("round trip: %v %v", err, x2)
			}
			// Each key finds its last entry, as when the file was
			// decoded into a map; no other key finds one.
			last := map[dirKey]int{}
			for i, e := range x.entries {
				last[e.key] = i
			}
			for k, i := range last {
				if j := x.find(k); j != i {
					t.Fatalf("key %v finds entry %d, not %d", k, j, i)
				}
				other := dirKey{k.dev, k.ino + 1}
				if _, in := last[other]; !in && x.find(other) >= 0 {
					t.Fatalf("key %v, not in the file, finds an entry", other)
				}
			}
			if x.keys != len(last) {
				t.Fatalf("%d keys, not %d", x.keys, len(last))
			}
		}
	})
}

func TestScanCacheSmallAndPruned(t *testing.T) {
	root, cache := cacheTree(t)
	old := cacheMargin
	cacheMargin = 0
	defer func() { cacheMargin = old }()
	time.Sleep(30 * time.Millisecond)
	// A tree smaller than minCacheDirs gets no file.
	cachedScan(t, cache, root, 3)
	if m, _ := filepath.Glob(filepath.Join(cache, "scan-*")); len(m) != 0 {
		t.Fatalf("a small tree got a cache file: %v", m)
	}
	// Past maxCacheFiles, the oldest files go.
	for i := 0; i < maxCacheFiles+10; i++ {
		f := filepath.Join(cache, "scan-old"+strconv.Itoa(i))
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-time.Duration(maxCacheFiles+10-i) * time.Hour)
		os.Chtimes(f, at, at)
	}
	oldMin := minCacheDirs
	minCacheDirs = 1
	defer func() { minCacheDirs = oldMin }()
	cachedScan(t, cache, root, 3)
	m, _ := filepath.Glob(filepath.Join(cache, "scan-*"))
	if len(m) > maxCacheFiles || len(m) < maxCacheFiles/2 {
		t.Fatalf("%d files after pruning", len(m))
	}
	if _, err := os.Stat(filepath.Join(cache, "scan-old0")); err == nil {
		t.Fatal("the oldest file was kept")
	}
	if _, err := os.Stat(filepath.Join(cache, "scan-old"+strconv.Itoa(maxCacheFiles+9))); err != nil {
		t.Fatal("the newest old file was removed")
	}
}

// TestCacheIndexResistsCraftedKeys: keys chosen so that they all shared
// one slot under the fixed hash the index first had (multiples of the
// inverse of its multiplier) must spread under the seeded one; with one
// slot for all, every lookup walked every key and decoding a crafted
// file was quadratic.
func TestCacheIndexResistsCraftedKeys(t *testing.T) {
	const a = 0x9e3779b97f4a7c15 // the old multiplier
	inv := uint64(a)
	for range 6 { // Newton's iteration for the inverse mod 2^64
		inv *= 2 - a*inv
	}
	var x cacheIndex
	for j := uint64(1); j <= 20000; j++ {
		x.entries = append(x.entries, cacheEntry{key: dirKey{dev: 0, ino: inv * (j << 48)}})
	}
	x.index()
	if x.keys != 20000 {
		t.Fatalf("%d distinct keys, want 20000", x.keys)
	}
	longest := 0
	for e := range x.entries {
		k := x.entries[e].key
		n := 1
		for i := x.keySlot(k); x.entries[x.slots[i]-1].key != k; i = (i + 1) & (len(x.slots) - 1) {
			n++
		}
		longest = max(longest, n)
		if got := x.find(k); got != e {
			t.Fatalf("find(%v) = %d, want %d", k, got, e)
		}
	}
	if longest > 64 {
		t.Fatalf("a lookup takes %d probes: the crafted keys share slots", longest)
	}
}
