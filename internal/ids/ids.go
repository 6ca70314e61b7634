// Package ids mints the prefixed, random, opaque identifiers the spec uses
// (em_, dom_, wh_, whd_, msg_, thr_, ...). 80 random bits make ids
// unguessable, so an id from another workspace cannot be found by probing;
// a millisecond time prefix keeps them in creation order.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"
)

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// New returns prefix + "_" + 26 characters of lowercase Crockford base32:
// 48 bits of the current unix millisecond followed by 80 random bits.
// 80 random bits keep ids unguessable; the time prefix makes ids minted
// later sort later, so database indexes on them grow at their right edge
// instead of touching a random page per insert (which dominated the cost of
// a commit on SQLite).
func New(prefix string) string { return At(prefix, time.Now()) }

// At is New with the time prefix of t: a row written after the fact (the
// request log's batches) keeps the order of when it happened.
func At(prefix string, t time.Time) string { return mint(prefix, t, true) }

// Floor is the smallest id of prefix minted at t or later, and no greater
// than any of them: with ids compared as strings, id >= Floor(p, t) selects
// those minted from t on.
func Floor(prefix string, t time.Time) string { return mint(prefix, t, false) }

func mint(prefix string, t time.Time, random bool) string {
	var b [16]byte
	ms := uint64(max(t.UnixMilli(), 0))
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	if random {
		if _, err := rand.Read(b[6:]); err != nil {
			panic("ids: crypto/rand failed: " + err.Error())
		}
	}
	// One allocation: the id is built in a buffer on the stack (prefixes
	// are a few letters) and copied into its string once.
	var out [32]byte
	buf := append(append(out[:0], prefix...), '_')
	buf = enc.AppendEncode(buf, b[:])
	return string(buf)
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

// Mask turns id into the id of prefix whose random bits are id's XORed
// with mask (its time bits are id's): the same mask turns it back. ok is
// false when id is not an id of this package's form. An event stored
// without its id (events' brief rows) has the id Mask gives of its email's
// id, so the id is found again from the email and the email from the id.
func Mask(prefix, id string, mask [10]byte) (string, bool) {
	i := strings.IndexByte(id, '_')
	if i < 0 || len(id)-i-1 != 26 {
		return "", false
	}
	var b [16]byte
	if n, err := enc.Decode(b[:], []byte(id[i+1:])); err != nil || n != 16 {
		return "", false
	}
	for j := range mask {
		b[6+j] ^= mask[j]
	}
	var out [32]byte
	buf := append(append(out[:0], prefix...), '_')
	return string(enc.AppendEncode(buf, b[:])), true
}
