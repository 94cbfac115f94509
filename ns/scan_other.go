//go:build !linux

package ns

// scanTree reads root and its subdirectories down to depth levels for the
// protected-name search (see scanReadDir).
func scanTree(root string, depth int, firsts, skip map[string]bool) (map[string]*dirInfo, []string) {
	return scanReadDir(root, depth, firsts, skip)
}

// scanRoot is scanTree (the scan cache is Linux's).
func scanRoot(root string, depth int, firsts, skip map[string]bool, cacheDir string) (map[string]*dirInfo, []string) {
	return scanReadDir(root, depth, firsts, skip)
}
