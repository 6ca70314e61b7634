package outbound

import (
	"encoding/base64"
	"mime"
	"net/mail"
	"strings"
	"unicode/utf8"
)

// lineLimit is the length every header line is kept within (RFC 5322
// section 2.1.1's "SHOULD be no more than 78", and the 76 of RFC 2047
// section 2 for lines holding encoded words).
const lineLimit = 76

// encodedWords renders value as RFC 2047 encoded words, one per line: the
// words are joined by CRLF SP so that no line, the first one included
// (which carries "Key: "), is longer than lineLimit. A value that is
// printable ASCII is returned unchanged (the header writer folds it at
// spaces) unless a word of it is too long for any line: the writer would
// split it with a space, so it is encoded instead (the space between two
// encoded words is not part of the text, RFC 2047 §6.2). Q encoding is used unless the text is mostly non-ASCII, where B
// is shorter.
func encodedWords(key, value string) string {
	if !needsEncoding(value) && !longWord(value, 998-len(key)-4) {
		return value
	}
	useB := nonASCII(value)*3 > len(value)
	first := lineLimit - len(key) - 3 // "Key: " and a margin of one
	if first < 24 {
		first = 24
	}
	limit := first
	var words []string
	rest := value
	for rest != "" {
		n := fitPrefix(rest, limit-len("=?utf-8?q??="), useB)
		words = append(words, encodeWord(rest[:n], useB))
		rest = rest[n:]
		limit = lineLimit - 2 // continuation lines start with one space
	}
	return strings.Join(words, "\r\n ")
}

// fitPrefix returns the length in bytes of the longest prefix of s made of
// whole runes whose encoding fits in room characters (at least one rune).
func fitPrefix(s string, room int, useB bool) int {
	n, size := 0, 0
	for n < len(s) {
		_, w := utf8.DecodeRuneInString(s[n:])
		var next int
		if useB {
			next = base64.StdEncoding.EncodedLen(n + w)
		} else {
			next = size + qLen(s[n:n+w])
		}
		if next > room && n > 0 {
			break
		}
		n += w
		if !useB {
			size = next
		}
	}
	return n
}

func encodeWord(s string, useB bool) string {
	if useB {
		return "=?utf-8?b?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
	}
	var b strings.Builder
	b.WriteString("=?utf-8?q?")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('_')
		case qSafe(c):
			b.WriteByte(c)
		default:
			b.WriteByte('=')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		}
	}
	b.WriteString("?=")
	return b.String()
}

// qSafe is RFC 2047 section 5 (3): the characters that may appear as
// themselves in a Q-encoded word anywhere a phrase may.
func qSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '!' || c == '*' || c == '+' || c == '-' || c == '/'
}

func qLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || qSafe(s[i]) {
			n++
		} else {
			n += 3
		}
	}
	return n
}

func needsEncoding(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' || c > '~') && c != '\t' {
			return true
		}
	}
	// A value that looks like an encoded word must be encoded itself, or a
	// reader would decode it.
	return strings.Contains(s, "=?")
}

// longWord reports whether s has a run of more than max characters
// without a space or tab.
func longWord(s string, max int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			run = 0
		} else if run++; run > max {
			return true
		}
	}
	return false
}

func nonASCII(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			n++
		}
	}
	return n
}

// addressList formats a header's mailboxes, one per line, display names
// that need it as encoded words (one per line, see encodedWords).
func addressList(key string, l []Address) string {
	parts := make([]string, len(l))
	for i, a := range l {
		k := key
		if i > 0 {
			k = "" // continuation line: one leading space
		}
		parts[i] = formatAddress(k, a)
	}
	return strings.Join(parts, ",\r\n ")
}

func formatAddress(key string, a Address) string {
	if a.Name == "" {
		return "<" + a.Address + ">"
	}
	if !needsEncoding(a.Name) {
		// net/mail quotes the name when it must; its address part is the
		// same "<addr>".
		return (&mail.Address{Name: a.Name, Address: a.Address}).String()
	}
	words := encodedWords(key, a.Name)
	last := words
	if i := strings.LastIndex(words, "\r\n"); i >= 0 {
		last = words[i+2:]
	} else if key != "" {
		last = key + ": " + words
	}
	if len(last)+len(a.Address)+3 > lineLimit {
		return words + "\r\n <" + a.Address + ">"
	}
	return words + " <" + a.Address + ">"
}

// setField sets header field k to v. A value that encodedWords or
// addressList already folded (it holds CRLF SP) is written as is; any
// other is left to the header writer, which folds at spaces.
func setField(h interface {
	Set(k, v string)
	Del(k string)
	AddRaw(kv []byte)
}, k, v string) {
	if !strings.Contains(v, "\r\n") {
		h.Set(k, v)
		return
	}
	h.Del(k)
	h.AddRaw([]byte(k + ": " + v + "\r\n"))
}

// attachmentParams formats a Content-Type or Content-Disposition value
// whose file name parameter (param) may be non-ASCII: RFC 2231 section 4
// extended notation (param*=utf-8”percent-encoded), split into numbered
// continuations (section 3) so each line stays within lineLimit. ASCII
// names use the ordinary quoted form.
func attachmentParams(value string, params map[string]string, param, filename string) string {
	base := mime.FormatMediaType(value, params)
	if base == "" {
		base = value
	}
	if filename == "" {
		return base
	}
	if !needsEncoding(filename) && !strings.ContainsAny(filename, "\"\\") && len(filename) < 60 {
		return base + ";\r\n " + param + "=\"" + filename + "\""
	}
	const room = lineLimit - 16 // " name*12*=" plus ';' and margin
	var b strings.Builder
	b.WriteString(base)
	// Split between characters, never inside one: Python's reader decodes
	// each continuation on its own and reports a split character as a defect.
	prefix, chunk, n := "utf-8''", "", 0
	flush := func() {
		b.WriteString(";\r\n " + param + "*" + itoa(n) + "*=" + prefix + chunk)
		prefix, chunk = "", ""
		n++
	}
	for rest := filename; rest != ""; {
		_, w := utf8.DecodeRuneInString(rest)
		enc := pctEncode(rest[:w])
		rest = rest[w:]
		if chunk != "" && len(prefix)+len(chunk)+len(enc) > room {
			flush()
		}
		chunk += enc
	}
	flush()
	return b.String()
}

// pctEncode is RFC 2231's value encoding: attribute-char as is, every
// other octet as %XX.
func pctEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > ' ' && c < 0x7f && !strings.ContainsRune("*'%()<>@,;:\\\"/[]?=", rune(c)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
