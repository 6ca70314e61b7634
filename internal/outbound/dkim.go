package outbound

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"mailroom/internal/libcrypto"
)

// overSigned are the fields a signature covers once more than the message
// has them (RFC 6376 section 8.15): a verifier then fails when anyone adds
// a second From, Subject, Date, To or Message-ID above the signed one,
// which is what a display-name or subject spoof needs, or a Reply-To or Cc
// the message did not have (a reply diverted or copied elsewhere).
var overSigned = [...]string{"From", "Subject", "Date", "To", "Message-ID", "Reply-To", "Cc"}

// signedWhenPresent are covered as often as they appear: the unsubscribe
// headers (RFC 8058 section 4 requires List-Unsubscribe and
// List-Unsubscribe-Post to be signed) and the other list fields (RFC 2369,
// RFC 2919), Gmail's Feedback-ID, the Sender and the MIME fields, so a
// relay cannot swap the body structure.
var signedWhenPresent = [...]string{
	"Sender", "List-Unsubscribe", "List-Unsubscribe-Post", "List-Id",
	"List-Help", "List-Subscribe", "List-Post", "List-Owner", "List-Archive",
	"Feedback-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding",
	"In-Reply-To", "References",
}

// Signer adds a DKIM-Signature for one domain and selector.
type Signer struct {
	domain, selector string
	key              crypto.Signer
}

// NewSigner returns a Signer; key must be an RSA or Ed25519 private key.
// An RSA key signs through libcrypto where it is loaded: the signature is
// most of a message's CPU, and libcrypto's costs a quarter of Go's.
func NewSigner(domain, selector string, key crypto.Signer) *Signer {
	if k, ok := key.(*rsa.PrivateKey); ok {
		key = libcrypto.Signer(k)
	}
	return &Signer{domain: domain, selector: selector, key: key}
}

// Sign returns raw with one DKIM-Signature header field prepended
// (relaxed/relaxed canonicalization, SHA-256), the field as go-msgauth
// writes it (tags sorted, b= folded last). The canonicalization is done
// here in one pass over raw: go-msgauth's copied the message through a
// pipe and canonicalized it byte by byte, about a fifth of the
// non-signing CPU of a 15 KB broadcast message (profiled); its verifier
// checks ours in the tests. The header fields are read in place and
// canonicalized into one scratch buffer, without a map or a string per
// field.
func (s *Signer) Sign(raw []byte) ([]byte, error) { return s.AppendSign(nil, raw) }

// AppendSign appends the signed message (the DKIM-Signature field, then
// raw) to dst: a caller signing many messages passes a reused buffer, as a
// new one per message the size of the message was a large allocation (over
// 32 KB) for a 15 KB html broadcast (profiled: bench/broadcast).
func (s *Signer) AppendSign(dst, raw []byte) ([]byte, error) {
	algo := "rsa-sha256"
	opts := crypto.SignerOpts(crypto.SHA256)
	switch s.key.Public().(type) {
	case *rsa.PublicKey:
	case ed25519.PublicKey:
		algo, opts = "ed25519-sha256", crypto.Hash(0)
	default:
		return nil, fmt.Errorf("outbound: dkim: unsupported key type %T", s.key.Public())
	}
	var fieldsBuf [32][]byte
	fields, body := splitHeader(raw, fieldsBuf[:0])
	bh := relaxedBodyHash(body)
	var keysBuf [32]int
	keys := fieldKeys(fields, keysBuf[:0])
	var counts [len(signedKeys)]int
	countKeys(fields, keys, &counts)
	// bh= and t= are read only while the field is written: encoded on the
	// stack, not in strings of their own.
	var bhBuf [44]byte
	var tBuf [20]byte
	bh64 := base64.StdEncoding.AppendEncode(bhBuf[:0], bh[:])
	t := strconv.AppendInt(tBuf[:0], dkimNow().Unix(), 10)
	tags := signatureTags{
		a: algo, bh: unsafe.String(unsafe.SliceData(bh64), len(bh64)), d: s.domain, s: s.selector,
		t: unsafe.String(unsafe.SliceData(t), len(t)), h: joinKeys(&counts),
	}
	h := sha256.New()
	scratch := make([]byte, 0, 1024)
	for i := range signedKeys {
		// As many instances as h= names, from the bottom up (RFC 6376
		// section 5.4.2); an over-signed name's extra one hashes nothing.
		for j, n := len(fields)-1, counts[i]; j >= 0 && n > 0; j-- {
			if keys[j] == i {
				scratch = appendRelaxedHeader(scratch[:0], fields[j])
				h.Write(scratch)
				n--
			}
		}
	}
	var fieldBuf [512]byte
	field := tags.appendField(fieldBuf[:0], "")
	scratch = appendRelaxedHeader(scratch[:0], field)
	h.Write(bytes.TrimRight(scratch, "\r\n"))
	sig, err := s.key.Sign(rand.Reader, h.Sum(nil), opts)
	if err != nil {
		return nil, fmt.Errorf("outbound: dkim: %w", err)
	}
	var bBuf [1024]byte // an RSA-4096 signature's 684 characters
	b64 := base64.StdEncoding.AppendEncode(bBuf[:0], sig)
	b := unsafe.String(unsafe.SliceData(b64), len(b64))
	dst = slices.Grow(dst, 256+len(tags.h)+len(b)*80/75+len(raw))
	dst = tags.appendField(dst, b)
	return append(dst, raw...), nil
}

// dkimNow is the signature's time (t=); tests may fix it.
var dkimNow = time.Now

// signedKeys are the names headerKeys counts: overSigned, then
// signedWhenPresent.
var signedKeys = [len(overSigned) + len(signedWhenPresent)]string(append(overSigned[:len(overSigned):len(overSigned)], signedWhenPresent[:]...))

// fieldKeys appends to dst, for each field, the index in signedKeys of
// its name (up to its first colon) or -1: each field's name is matched
// once, and only with the names of its length when it is ASCII, rather
// than with every name per name signed (profiled).
func fieldKeys(fields [][]byte, dst []int) []int {
	for _, f := range fields {
		name, _, _ := bytes.Cut(f, []byte(":"))
		dst = append(dst, keyOf(name))
	}
	return dst
}

// keyOf is the index in signedKeys of the name nameIs finds name to be,
// or -1. No two of signedKeys are one name to nameIs.
func keyOf(name []byte) int {
	trimmed := bytes.TrimSpace(name)
	ascii := true
	for _, c := range trimmed {
		if c >= utf8.RuneSelf {
			ascii = false // strings.ToLower may change its length
			break
		}
	}
	for i, k := range signedKeys {
		if (!ascii || len(trimmed) == len(k)) && nameIs(name, k) {
			return i
		}
	}
	return -1
}

// countKeys counts the fields of each of signedKeys' names (keys, from
// fieldKeys), in h= terms: an over-signed name once more than present.
func countKeys(fields [][]byte, keys []int, counts *[len(signedKeys)]int) {
	for i := range overSigned {
		counts[i] = 1
	}
	for j, f := range fields {
		if f[0] == ' ' || f[0] == '\t' {
			continue // a continuation line before any field: headerKeys's reading
		}
		name, _, ok := bytes.Cut(f, []byte(":"))
		if !ok || bytes.IndexByte(name, '\n') >= 0 {
			continue
		}
		if keys[j] >= 0 {
			counts[keys[j]]++
		}
	}
}

// joinKeys is the h= value for counts.
func joinKeys(counts *[len(signedKeys)]int) string {
	var b strings.Builder
	b.Grow(256)
	for i, k := range signedKeys {
		for range counts[i] {
			if b.Len() > 0 {
				b.WriteByte(':')
			}
			b.WriteString(k)
		}
	}
	return b.String()
}

// nameIs reports whether a field's name (white space around it aside) is
// k, case aside as strings.ToLower sees it.
func nameIs(name []byte, k string) bool {
	name = bytes.TrimSpace(name)
	for _, c := range name {
		if c >= utf8.RuneSelf {
			return strings.ToLower(string(name)) == strings.ToLower(k)
		}
	}
	if len(name) != len(k) {
		return false
	}
	for i, c := range name {
		// Equal, or the same letter in the other case (k is letters and
		// hyphens).
		if c != k[i] && (c|0x20 != k[i]|0x20 || c|0x20 < 'a') {
			return false
		}
	}
	return true
}

// headerKeys is the h= list for raw: every over-signed field one time more
// than present, every other listed field as many times as present.
func headerKeys(raw []byte) []string {
	fields, _ := splitHeader(raw, nil)
	var counts [len(signedKeys)]int
	countKeys(fields, fieldKeys(fields, nil), &counts)
	return strings.Split(joinKeys(&counts), ":")
}

// splitHeader appends the header fields of raw (each with its folded
// lines and line end, in place) to fields and returns the body after the
// blank line.
func splitHeader(raw []byte, fields [][]byte) ([][]byte, []byte) {
	rest := raw
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return fields, rest
		}
		if (line[0] == ' ' || line[0] == '\t') && len(fields) > 0 {
			last := fields[len(fields)-1]
			fields[len(fields)-1] = last[:len(last)+len(line)]
			continue
		}
		fields = append(fields, line)
	}
	return fields, nil
}

// appendRelaxedHeader appends field f canonicalized as RFC 6376 section
// 3.4.2 has it: the name lowercased, the value unfolded with runs of
// white space as one space, none at either end, then CRLF.
func appendRelaxedHeader(dst, f []byte) []byte {
	k, v, ok := bytes.Cut(f, []byte(":"))
	dst = appendLower(dst, bytes.TrimSpace(k))
	dst = append(dst, ':')
	if !ok {
		// As strings.TrimSpace(strings.ToLower(f)) did: trimmed after
		// lowering.
		return append(dst, '\r', '\n')
	}
	first := true
	for i := 0; i < len(v); {
		for i < len(v) && isFoldSpace(v[i]) {
			i++
		}
		j := i
		for j < len(v) && !isFoldSpace(v[j]) {
			j++
		}
		if j > i {
			if !first {
				dst = append(dst, ' ')
			}
			dst = append(dst, v[i:j]...)
			first = false
		}
		i = j
	}
	return append(dst, '\r', '\n')
}

func isFoldSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// appendLower appends b lowercased as strings.ToLower does.
func appendLower(dst, b []byte) []byte {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return append(dst, strings.ToLower(string(b))...)
		}
	}
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// relaxedBodyHash is the SHA-256 of the body canonicalized as RFC 6376
// section 3.4.4 (and go-msgauth) has it: a lone LF counts as CRLF, runs of
// spaces and tabs become one space and vanish before a line break, the
// breaks at the end go, and a body with any text ends with one CRLF.
func relaxedBodyHash(body []byte) [32]byte {
	if end, ok := canonicalEnd(body); ok {
		// Already canonical up to its trailing breaks: hashed in place,
		// without the copy and the byte classes below (most bodies we
		// build: CRLF lines, single spaces, nothing at a line's end).
		switch {
		case end == 0:
			return sha256.Sum256(nil)
		case end+2 <= len(body):
			return sha256.Sum256(body[:end+2])
		}
		h := sha256.New()
		h.Write(body)
		h.Write([]byte("\r\n"))
		var sum [32]byte
		h.Sum(sum[:0])
		return sum
	}
	h := sha256.New()
	var buf [4096]byte
	out := buf[:0]
	var breaks []byte // line-break bytes held until text follows
	wsp, written, prevCR := false, false, false
	for i := 0; i < len(body); {
		ch := body[i]
		cr := prevCR
		prevCR = false
		switch ch {
		case ' ', '\t':
			wsp = true
			i++
			continue
		case '\r':
			prevCR = true
			wsp = false
			breaks = append(breaks, ch)
			i++
			continue
		case '\n':
			wsp = false
			if !cr {
				breaks = append(breaks, '\r')
			}
			breaks = append(breaks, ch)
			i++
			continue
		}
		// A run of ordinary bytes, and of single spaces between them (which
		// canonicalization keeps), is copied whole: byte by byte, this loop
		// was most of a 15 KB body's canonicalization.
		j := i + 1
		for j < len(body) {
			if j+8 <= len(body) && plainBodyRun(binary.LittleEndian.Uint64(body[j:])) {
				j += 8
				continue
			}
			if c := body[j]; !bodySpecial[c] {
				j++
			} else if c == ' ' && j+1 < len(body) && !bodySpecial[body[j+1]] {
				j += 2
			} else {
				break
			}
		}
		if len(out)+len(breaks)+1+(j-i) > cap(out) {
			h.Write(out)
			out = buf[:0]
		}
		if len(breaks) > 0 {
			if len(breaks) > cap(out)-len(out)-1 {
				h.Write(out)
				h.Write(breaks)
				out = buf[:0]
			} else {
				out = append(out, breaks...)
			}
			breaks = breaks[:0]
		}
		if wsp {
			out = append(out, ' ')
			wsp = false
		}
		if j-i > cap(out)-len(out) {
			h.Write(out)
			out = buf[:0]
			h.Write(body[i:j])
		} else {
			out = append(out, body[i:j]...)
		}
		written = true
		i = j
	}
	h.Write(out)
	if written {
		h.Write([]byte("\r\n"))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// canonicalEnd reports whether body is its own relaxed canonical form
// but for its end (no tab, no space before a space or a line break or the
// end, every line break a CRLF) and where its text ends, before the line
// breaks canonicalization drops: one scan of each kind, word at a time in
// the runtime, rather than relaxedBodyHash's byte classes.
func canonicalEnd(body []byte) (int, bool) {
	end := len(body)
	for end >= 2 && body[end-1] == '\n' && body[end-2] == '\r' {
		end -= 2
	}
	if end > 0 && bodySpecial[body[end-1]] {
		return 0, false
	}
	if bytes.IndexByte(body, '\t') >= 0 || hasDoubleSpace(body) {
		return 0, false
	}
	lines := 0
	for i := 0; ; i++ {
		j := bytes.IndexByte(body[i:], '\n')
		if j < 0 {
			break
		}
		if i += j; i == 0 || body[i-1] != '\r' || i >= 2 && body[i-2] == ' ' {
			return 0, false
		}
		lines++
	}
	// Each CR is then one before an LF.
	return end, bytes.Count(body, []byte{'\r'}) == lines
}

// hasDoubleSpace reports whether b has two spaces in a row, eight bytes
// a step seven apart (each window holds seven of the pairs), four windows
// a round: bytes.Index looks for a pair byte by byte, and prose has a
// space every few bytes.
func hasDoubleSpace(b []byte) bool {
	const ones, highs, spaces, top = 0x0101010101010101, 0x8080808080808080, 0x2020202020202020, 0xff << 56
	if len(b) < 8 {
		return bytes.Contains(b, []byte("  "))
	}
	// Byte k of pair(m) is zero when bytes k and k+1 of the window are
	// spaces; the last byte has no pair in the window. The high bits are
	// taken once at the end.
	pair := func(w []byte) uint64 {
		m := binary.LittleEndian.Uint64(w) ^ spaces
		p := m | m>>8 | top
		return (p - ones) &^ p
	}
	var found uint64
	last := len(b) - 8
	i := 0
	for ; i+21 <= last; i += 28 {
		w := b[i : i+29]
		found |= pair(w[0:8]) | pair(w[7:15]) | pair(w[14:22]) | pair(w[21:29])
	}
	for ; i < last; i += 7 {
		found |= pair(b[i : i+8])
	}
	found |= pair(b[last:]) // the last window, over bytes seen before
	return found&highs != 0
}

// plainBodyRun reports whether the eight bytes in w (little-endian) all
// go on in a run: no control byte (CR, LF and tab among them), no space
// before another space and none last (the byte after it is not known).
// A body is mostly such runs, so they are copied eight bytes a step.
func plainBodyRun(w uint64) bool {
	const ones, highs, low7 = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	// An ASCII byte under 0x20 (adding 0x60 to its low seven bits leaves
	// its high bit clear; no carry crosses a byte).
	control := ^((w & low7) + 0x60*ones) & ^w & highs
	x := w ^ 0x20*ones // a space is now a zero byte
	spaces := ^((x & low7) + low7 | x) & highs
	return control|spaces&(spaces>>8)|spaces&(0x80<<56) == 0
}

// bodySpecial marks the bytes relaxed body canonicalization looks at.
var bodySpecial = [256]bool{' ': true, '\t': true, '\r': true, '\n': true}

// signatureTags are the DKIM-Signature's tags but b= (and the constant
// v= and c=).
type signatureTags struct{ a, bh, d, h, s, t string }

// appendField appends the DKIM-Signature field with b as go-msgauth
// writes it: the tags but b= sorted, lines kept under 76 characters, b=
// folded last.
func (g *signatureTags) appendField(dst []byte, b string) []byte {
	dst = append(dst, "DKIM-Signature:"...)
	lineLen := 0 // of the line after "DKIM-Signature:" or the fold
	for _, kv := range [...][2]string{{"a", g.a}, {"bh", g.bh}, {"c", "relaxed/relaxed"}, {"d", g.d}, {"h", g.h}, {"s", g.s}, {"t", g.t}, {"v", "1"}} {
		k, v := kv[0], kv[1]
		if 3+lineLen+len(v)+len(k) > 75 {
			dst = append(dst, '\r', '\n')
			lineLen = 0
		}
		dst = append(append(append(append(append(dst, ' '), k...), '='), v...), ';')
		lineLen += 3 + len(k) + len(v)
	}
	dst = append(dst, '\r', '\n')
	rest := " b=" + b
	for len(rest) > 75 {
		dst = append(append(dst, rest[:75]...), "\r\n "...)
		rest = rest[75:]
	}
	dst = append(dst, rest...)
	return append(dst, '\r', '\n')
}

// DKIMPublicRecord returns the TXT record value to publish at
// <selector>._domainkey.<domain> for pub: "v=DKIM1; k=rsa; p=<base64 DER>"
// (SubjectPublicKeyInfo for RSA, the raw 32 bytes for Ed25519 per RFC 8463).
func DKIMPublicRecord(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			return "", err
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der), nil
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(k), nil
	default:
		return "", fmt.Errorf("outbound: dkim: unsupported public key type %T", pub)
	}
}
