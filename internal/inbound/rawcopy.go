package inbound

import (
	"bytes"
	"errors"
	"unsafe"
)

// rawCopy is a received message's raw copy as message_raw keeps it: the
// bytes with the text body cut out where it stands in them byte for byte
// (an 8bit or 7bit text part), since messages.text_body holds it already,
// and textAt, where it goes back (-1: data is the whole message). Issue
// #47: the text was a tenth of what receiving wrote.
type rawCopy struct {
	data   []byte
	textAt int
	buf    *bytes.Buffer // data's pooled buffer when cut; see release
}

// minCut is the shortest text worth cutting out: below it the search
// and the copy cost more than the bytes saved.
const minCut = 1024

// cutText is raw's copy for message_raw, text (the stored text body) cut
// out of it when raw holds it verbatim.
func cutText(raw []byte, text *string) rawCopy {
	if text == nil || len(*text) < minCut || len(raw) == 0 {
		return rawCopy{data: raw, textAt: -1}
	}
	// The search reads both in place; neither changes meanwhile.
	i := bytes.Index(raw, unsafe.Slice(unsafe.StringData(*text), len(*text)))
	if i < 0 {
		return rawCopy{data: raw, textAt: -1}
	}
	buf := getBuffer()
	buf.Grow(len(raw) - len(*text))
	buf.Write(raw[:i])
	buf.Write(raw[i+len(*text):])
	return rawCopy{data: buf.Bytes(), textAt: i, buf: buf}
}

// release gives the cut copy's buffer back once its statement has run.
func (c rawCopy) release() {
	if c.buf != nil {
		putBuffer(c.buf)
	}
}

var errRawCorrupt = errors.New("inbound: a raw copy's cut-out text is missing or out of place")

// restoreText puts text back into data at at: the raw message as it
// arrived, byte for byte.
func restoreText(data []byte, at int, text string) ([]byte, error) {
	if at < 0 || at > len(data) {
		return nil, errRawCorrupt
	}
	out := make([]byte, 0, len(data)+len(text))
	out = append(out, data[:at]...)
	out = append(out, text...)
	return append(out, data[at:]...), nil
}
