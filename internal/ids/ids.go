// Package ids mints the prefixed, random, opaque identifiers the spec uses
// (em_, dom_, wh_, whd_, msg_, thr_, ...). 128 bits of randomness make ids
// unguessable, so an id from another workspace cannot be found by probing.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// New returns prefix + "_" + 26 characters of lowercase Crockford base32 (128 bits).
func New(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	return prefix + "_" + enc.EncodeToString(b[:])
}

// HasPrefix reports whether id carries the given prefix.
func HasPrefix(id, prefix string) bool { return strings.HasPrefix(id, prefix+"_") }

// Secret returns n random bytes encoded in the same alphabet, for key and
// signing-secret material.
func Secret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	return enc.EncodeToString(b)
}
