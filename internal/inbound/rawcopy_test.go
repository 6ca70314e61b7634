package inbound

import (
	"bytes"
	"testing"
)

// FuzzRawCopy: whatever the message and wherever its bodies stand in it
// (anywhere, overlapping, twice, nowhere), the cut copy restores to the
// message byte for byte.
func FuzzRawCopy(f *testing.F) {
	long := bytes.Repeat([]byte("invoice café "), 100)
	f.Add(append(append([]byte("head\r\n\r\n"), long...), long...), 8, len(long), 8+len(long), len(long))
	f.Add(append([]byte("x"), long...), 1, len(long), 1, len(long))
	f.Add(append([]byte("x"), long...), 1, len(long)-5, 5, len(long)-5)
	f.Add(long, 0, len(long), 0, 0)
	f.Fuzz(func(t *testing.T, raw []byte, ts, tn, hs, hn int) {
		body := func(s, n int) *string {
			if s < 0 || n < 0 || s > len(raw) || n > len(raw)-s {
				return nil
			}
			b := string(raw[s : s+n])
			return &b
		}
		text, html := body(ts, tn), body(hs, hn)
		c := cutBodies(raw, text, html)
		defer c.release()
		if c.textAt < 0 && c.htmlAt < 0 && !bytes.Equal(c.data, raw) {
			t.Fatalf("nothing cut, yet the copy differs")
		}
		n := len(raw)
		if c.textAt >= 0 {
			n -= len(*text)
		}
		if c.htmlAt >= 0 {
			n -= len(*html)
		}
		if len(c.data) != n {
			t.Fatalf("copy of %d bytes, want %d", len(c.data), n)
		}
		got, err := restoreBodies(append([]byte(nil), c.data...), c.textAt, c.htmlAt, text, html)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("restored %q (%v), want %q", got, err, raw)
		}
	})
}
