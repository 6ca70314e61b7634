package inbound

import (
	"bytes"
	"errors"
	"unsafe"
)

// rawCopy is a received message's raw copy as message_raw keeps it: the
// bytes with the text and html bodies cut out where they stand in them
// byte for byte (7bit and 8bit parts), since messages.text_body and
// html_body hold them already, and where they go back (issue #47: the
// text was a tenth of what receiving wrote). The text is cut first, then
// the html out of what is left; restoring goes the other way round. So a
// received message's text_body and html_body never change while its raw
// copy is kept.
type rawCopy struct {
	data   []byte
	textAt int           // in the message as it arrived; -1: not cut
	htmlAt int           // in the message without its text; -1: not cut
	buf    *bytes.Buffer // data's pooled buffer when cut; see release
}

// minCut is the shortest body worth cutting out: below it the search and
// the copy cost more than the bytes saved.
const minCut = 1024

// cutBodies is raw's copy for message_raw, the stored text and html
// bodies cut out of it where raw holds them verbatim.
func cutBodies(raw []byte, text, html *string) rawCopy {
	c := rawCopy{data: raw, textAt: -1, htmlAt: -1}
	t := bodyIndex(raw, text)
	nt := 0
	if t >= 0 {
		c.textAt, nt = t, len(*text)
	}
	// The html outside the text, as a place in raw and in raw less the text.
	h, at := -1, -1
	if t < 0 {
		h = bodyIndex(raw, html)
		at = h
	} else if h = bodyIndex(raw[:t], html); h >= 0 {
		at = h
	} else if h = bodyIndex(raw[t+nt:], html); h >= 0 {
		at, h = t+h, t+nt+h
	}
	nh := 0
	if h >= 0 {
		c.htmlAt, nh = at, len(*html)
	}
	if t < 0 && h < 0 {
		return c
	}
	// The ranges kept: raw less [t, t+nt) and [h, h+nh), in order.
	first, firstN, second, secondN := t, nt, h, nh
	if t < 0 || h >= 0 && h < t {
		first, firstN, second, secondN = h, nh, t, nt
	}
	c.buf = getBuffer()
	c.buf.Grow(len(raw) - nt - nh)
	if second < 0 {
		c.buf.Write(raw[:first])
		c.buf.Write(raw[first+firstN:])
	} else {
		c.buf.Write(raw[:first])
		c.buf.Write(raw[first+firstN : second])
		c.buf.Write(raw[second+secondN:])
	}
	c.data = c.buf.Bytes()
	return c
}

// bodyIndex is where s first stands in b, -1 when nowhere or when s is nil or
// shorter than minCut.
func bodyIndex(b []byte, s *string) int {
	if s == nil || len(*s) < minCut {
		return -1
	}
	// Both are read in place; neither changes meanwhile.
	return bytes.Index(b, unsafe.Slice(unsafe.StringData(*s), len(*s)))
}

// release gives the cut copy's buffer back once its statement has run.
func (c rawCopy) release() {
	if c.buf != nil {
		putBuffer(c.buf)
	}
}

var errRawCorrupt = errors.New("inbound: a raw copy's cut-out body is missing or out of place")

// restoreBodies puts the html and then the text back into data (-1 and
// nil: not cut): the message as it arrived, byte for byte.
func restoreBodies(data []byte, textAt, htmlAt int, text, html *string) ([]byte, error) {
	for _, b := range []struct {
		at int
		s  *string
	}{{htmlAt, html}, {textAt, text}} {
		if b.at < 0 {
			continue
		}
		if b.s == nil || b.at > len(data) {
			return nil, errRawCorrupt
		}
		out := make([]byte, 0, len(data)+len(*b.s))
		out = append(out, data[:b.at]...)
		out = append(out, *b.s...)
		data = append(out, data[b.at:]...)
	}
	return data, nil
}
