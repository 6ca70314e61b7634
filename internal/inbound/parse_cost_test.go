package inbound

import (
	"testing"
	"time"

	"mailroom/internal/testkit/hostile"
)

// TestParseHostileCost: the payloads of issue #38 (a 707 KB message nested
// 10,000 deep, a 9 MB folded header) cost the parser, as receiving and as
// a download call it, under 500 ms and 50 MB each, though smtpin refuses
// them before it: the parser's own caps (maxDepth, maxParts,
// maxHeaderLen) bound it whatever reaches it. (The nested one is read
// through 30 nested multipart readers: 50-130 ms on a busy machine.)
func TestParseHostileCost(t *testing.T) {
	for _, raw := range [][]byte{hostile.NestedARF("a@x", 10000), hostile.FoldedHeader("a@x", 9<<20)} {
		for _, data := range []bool{false, true} {
			c := hostile.Measure(func() { parseKept(raw, data) })
			t.Logf("%d bytes, data %v: %s", len(raw), data, c)
			if c.Time > 500*time.Millisecond || c.Alloc > 50<<20 {
				t.Errorf("%d bytes, data %v: %s, over 500 ms or 50 MB", len(raw), data, c)
			}
		}
	}
}

// parseBudget: go-message's readers cost some KB per part, and parts are
// at most maxParts, so a fixed allowance covers them; the copies of the
// text grow with the input.
var parseBudget = hostile.Budget{Time: time.Second, TimePerByte: 200 * time.Nanosecond, Alloc: 24 << 20, AllocPerByte: 24}

// FuzzParseCost: any message parses, with and without the parts' bytes,
// within a time and memory budget linear in its size.
func FuzzParseCost(f *testing.F) {
	for _, s := range []string{
		"Subject: hi\r\n\r\nbody",
		"Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: multipart/alternative; boundary=y\r\n\r\n--y\r\n\r\nt\r\n--y--\r\n--x\r\nContent-Disposition: attachment; filename=a\r\nContent-Transfer-Encoding: base64\r\n\r\nQUJD\r\n--x--\r\n",
		"Content-Type: multipart/mixed\r\n\r\n--\r\nContent-Type: multipart/mixed\r\n\r\n--\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(hostile.NestedARF("a@x", 10000))
	f.Add(hostile.FoldedHeader("a@x", 1<<20))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := hostile.Measure(func() {
			parseKept(raw, false)
			parseKept(raw, true)
		})
		if err := parseBudget.Check(c, len(raw)); err != nil {
			t.Fatal(err)
		}
	})
}
