// Package hostile builds the messages of issue #38 item 4, which cost
// unbounded work before the parsers were capped, and measures what a call
// costs, so the parsers' tests, fuzz targets and the SMTP end-to-end test
// hold the same payloads to the same budgets.
package hostile

import (
	"bytes"
	"fmt"
	"runtime"
	"time"
)

// NestedARF is a feedback report (RFC 5965) whose human-readable part is
// depth multiparts nested one in the next: 10,000 levels make the 707 KB
// report of the issue, which cost 20 s and 470 MB to walk.
func NestedARF(rcpt string, depth int) []byte {
	var b bytes.Buffer
	b.Grow(depth * 72)
	fmt.Fprintf(&b, "From: abuse@isp.example\r\nTo: %s\r\nSubject: FW: complaint\r\nMIME-Version: 1.0\r\n", rcpt)
	b.WriteString("Content-Type: multipart/report; report-type=feedback-report; boundary=\"top\"\r\n\r\n--top\r\n")
	for i := range depth {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=\"b%d\"\r\n\r\n--b%d\r\n", i, i)
	}
	b.WriteString("Content-Type: text/plain\r\n\r\ncomplaint\r\n")
	for i := depth - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "--b%d--\r\n", i)
	}
	b.WriteString("--top\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: x/1\r\nVersion: 1\r\n\r\n--top--\r\n")
	return b.Bytes()
}

// FoldedHeader is a message whose X-Long header is folded over short lines
// until the message is size bytes: 9 MB cost the DKIM verifier's header
// reader 11 s of appends.
func FoldedHeader(rcpt string, size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 128)
	fmt.Fprintf(&b, "From: a@sender.example\r\nTo: %s\r\nSubject: folded\r\nX-Long: start", rcpt)
	for b.Len() < size-64 {
		b.WriteString("\r\n folded")
	}
	b.WriteString("\r\n\r\nbody\r\n")
	return b.Bytes()
}

// Cost is what one call took: wall time and bytes allocated (the process's
// TotalAlloc over the call, so run it alone).
type Cost struct {
	Time  time.Duration
	Alloc uint64
}

func (c Cost) String() string {
	return fmt.Sprintf("%s, %.1f MB allocated", c.Time.Round(time.Microsecond), float64(c.Alloc)/(1<<20))
}

// Measure runs f once and returns its cost.
func Measure(f func()) Cost {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	return Cost{Time: d, Alloc: after.TotalAlloc - before.TotalAlloc}
}

// Budget is what a parser may spend on an input of n bytes: a fixed
// allowance plus a multiple of the input, so anything worse than linear
// in the input fails it as inputs grow.
type Budget struct {
	Time         time.Duration // fixed
	TimePerByte  time.Duration
	Alloc        uint64 // fixed
	AllocPerByte uint64
}

// Check returns an error when c exceeds the budget for an input of n bytes.
func (b Budget) Check(c Cost, n int) error {
	maxTime := b.Time + time.Duration(n)*b.TimePerByte
	maxAlloc := b.Alloc + uint64(n)*b.AllocPerByte
	if c.Time > maxTime || c.Alloc > maxAlloc {
		return fmt.Errorf("%d bytes cost %s; budget %s and %.1f MB", n, c, maxTime, float64(maxAlloc)/(1<<20))
	}
	return nil
}
