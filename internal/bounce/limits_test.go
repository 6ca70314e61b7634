package bounce

import (
	"errors"
	"strings"
	"testing"
	"time"

	"mailroom/internal/msglimit"
	"mailroom/internal/testkit/hostile"
)

// TestHostileReportsCost: the feedback report of issue #38, nested 10,000
// deep (707 KB; 20 s and 470 MB before), and a report with a 9 MB folded
// header are refused as unreadable within 200 ms and 50 MB; a report just
// inside the limits still reads.
func TestHostileReportsCost(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  []byte
		want error
	}{
		{"nested 10,000 deep", hostile.NestedARF("fbl@x", 10000), msglimit.ErrTooDeep},
		{"9 MB folded header", append([]byte("Content-Type: multipart/report; report-type=feedback-report; boundary=top\r\n"), hostile.FoldedHeader("fbl@x", 9<<20)...), msglimit.ErrHeaderTooLarge},
		{"too many parts", manyParts(msglimit.MaxParts + 10), msglimit.ErrTooManyParts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			c := hostile.Measure(func() {
				Detect(tc.raw)
				_, err = ParseARF(tc.raw)
			})
			t.Logf("%d bytes: %v; %s", len(tc.raw), err, c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseARF: %v, want %v", err, tc.want)
			}
			if c.Time > 200*time.Millisecond || c.Alloc > 50<<20 {
				t.Fatalf("over 200 ms or 50 MB: %s", c)
			}
		})
	}
	for _, raw := range [][]byte{hostile.NestedARF("fbl@x", msglimit.MaxDepth-1), manyParts(msglimit.MaxParts - 10)} {
		var a *ARF
		var err error
		c := hostile.Measure(func() { a, err = ParseARF(raw) })
		t.Logf("inside the limits, %d bytes: %s", len(raw), c)
		if err != nil || a.FeedbackType != "abuse" {
			t.Fatalf("a report inside the limits: %v", err)
		}
	}
}

// manyParts is a feedback report with n text parts before its
// machine-readable part.
func manyParts(n int) []byte {
	var b strings.Builder
	b.WriteString("Content-Type: multipart/report; report-type=feedback-report; boundary=top\r\n\r\n")
	for range n {
		b.WriteString("--top\r\nContent-Type: text/plain\r\n\r\nx\r\n")
	}
	b.WriteString("--top\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\n\r\n--top--\r\n")
	return []byte(b.String())
}

// reportBudget is what reading a report may spend: go-message's readers
// cost some KB per part, and parts are at most msglimit.MaxParts, so a
// fixed allowance covers them; the rest grows with the input. Nesting's
// square (470 MB for 707 KB) is far past it.
var reportBudget = hostile.Budget{Time: time.Second, TimePerByte: 200 * time.Nanosecond, Alloc: 20 << 20, AllocPerByte: 16}

// FuzzReportCost: any message is detected and read as a DSN and as an
// ARF report within a time and memory budget linear in its size.
func FuzzReportCost(f *testing.F) {
	seed(f)
	f.Add(hostile.NestedARF("fbl@x", 10000))
	f.Add(hostile.NestedARF("fbl@x", msglimit.MaxDepth-1))
	f.Add(manyParts(msglimit.MaxParts - 10))
	f.Add(append([]byte("Content-Type: multipart/report; report-type=delivery-status; boundary=top\r\n"), hostile.FoldedHeader("x@y", 1<<20)...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := hostile.Measure(func() {
			Detect(raw)
			_, _ = ParseDSN(raw)
			_, _ = ParseARF(raw)
		})
		if err := reportBudget.Check(c, len(raw)); err != nil {
			t.Fatal(err)
		}
	})
}
