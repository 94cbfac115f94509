package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Digest identifies the programs this build embeds for its GOARCH (the
// table in filters_GOARCH.go): the hex SHA-256 over every entry, in the
// order of its Config's %+v key, of the key and the program bytes, each
// preceded by its length. Two builds with the same Digest load the same
// filters, whatever else differs between them. It is "none" when this
// architecture has no table. It is computed on each call (~250 KB hashed
// on amd64, well under a millisecond), not at start-up.
func Digest() string {
	if len(generated) == 0 {
		return "none"
	}
	type entry struct{ key, program string }
	entries := make([]entry, len(generated))
	for i, g := range generated {
		entries[i] = entry{fmt.Sprintf("%+v", g.config), g.program}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	h := sha256.New()
	var n [8]byte
	for _, e := range entries {
		for _, s := range []string{e.key, e.program} {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
