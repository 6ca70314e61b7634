package outbound

import (
	"bytes"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// fields is a message header kept and written as go-message's
// textproto.Header keeps and writes one (Set replaces and puts the field
// on top, AddRaw keeps the bytes given, WriteHeader writes the newest
// first), for the messages writeInline writes: its map, field structs
// and formatted strings were two thirds of the allocations of a
// broadcast message's build and signature (profiled). A test holds the
// two to the same bytes.
type fields struct {
	l []field // oldest first
}

type field struct {
	k   string // canonical, as Del compares it
	v   string // the value, or the whole field and its line end when raw
	raw bool
}

// SetDate and SetMessageID are mail.Header's.
func (h *fields) SetDate(t time.Time) {
	if !t.IsZero() {
		h.Set("Date", t.Format(dateLayout))
	} else {
		h.Del("Date")
	}
}

func (h *fields) SetMessageID(id string) {
	if id != "" {
		h.Set("Message-Id", "<"+id+">")
	} else {
		h.Del("Message-Id")
	}
}

// dateLayout is go-message's for the Date field.
const dateLayout = "Mon, 02 Jan 2006 15:04:05 -0700"

func (h *fields) Set(k, v string) {
	k = canonicalKey(k)
	h.Del(k)
	h.l = append(h.l, field{k: k, v: v})
}

func (h *fields) Del(k string) {
	k = canonicalKey(k)
	h.l = slices.DeleteFunc(h.l, func(f field) bool { return f.k == k })
}

func (h *fields) AddRaw(kv []byte) {
	colon := bytes.IndexByte(kv, ':')
	if colon < 0 {
		panic("outbound: fields.AddRaw: missing colon")
	}
	k := canonicalKey(string(bytes.Trim(kv[:colon], " \t")))
	h.l = append(h.l, field{k: k, v: string(kv), raw: true})
}

// canonicalKey is textproto.CanonicalMIMEHeaderKey(k), without making
// a new string for the names every message has that it changes.
func canonicalKey(k string) string {
	switch k {
	case "MIME-Version":
		return "Mime-Version"
	case "Feedback-ID":
		return "Feedback-Id"
	}
	return textproto.CanonicalMIMEHeaderKey(k)
}

// appendTo appends the header and the blank line after it as
// textproto.WriteHeader writes them; like it, it stops at a field it
// cannot write (a name with a byte that is not printable ASCII or is a
// colon, a value with CR or LF), without the blank line.
func (h *fields) appendTo(dst []byte) []byte {
	for i := len(h.l) - 1; i >= 0; i-- {
		f := h.l[i]
		if f.raw {
			dst = append(dst, f.v...)
			continue
		}
		for _, ch := range f.k {
			if !(ch >= '!' && ch < ':' || ch > ':' && ch <= '~') {
				return dst
			}
		}
		if strings.ContainsAny(f.v, "\r\n") {
			return dst
		}
		dst = appendHeaderField(dst, f.k, f.v)
	}
	return append(dst, '\r', '\n')
}

// appendHeaderField appends go-message's formatHeaderField(k, v): lines
// kept under 76 characters, folded at white space where there is some.
func appendHeaderField(dst []byte, k, v string) []byte {
	dst = append(append(dst, k...), ": "...)
	if v == "" {
		return append(dst, '\r', '\n')
	}
	first := true
	for len(v) > 0 {
		keylen := 0
		if first {
			keylen = len(k) + 2
		}
		l, folding, next, ok := foldLine(v, preferredHeaderLen-keylen)
		if !ok {
			l, folding, next, _ = foldLine(v, maxHeaderLen-keylen)
		}
		dst = append(append(dst, l...), folding...)
		v = next
		first = false
	}
	return dst
}

const (
	preferredHeaderLen = 76
	maxHeaderLen       = 998
)

// foldLine is go-message's, the line returned as its text and the
// folding after it rather than one string made of the two.
func foldLine(v string, maxlen int) (line, folding, next string, ok bool) {
	ok = true
	foldBefore := maxlen + 1
	foldAt := len(v)
	if foldBefore > len(v) {
		if v[len(v)-1] != '\n' {
			folding = "\r\n"
		}
	} else {
		foldAt = strings.LastIndexAny(v[:foldBefore], " \t\n")
		if foldAt == 0 {
			foldAt = foldBefore - 1
		} else if foldAt < 0 {
			foldAt = foldBefore - 2
		}
		switch v[foldAt] {
		case ' ', '\t':
			if v[foldAt-1] != '\n' {
				folding = "\r\n"
			}
		case '\n':
			folding = ""
		default:
			folding = "\r\n "
			ok = false
		}
	}
	return v[:foldAt], folding, v[foldAt:], ok
}
