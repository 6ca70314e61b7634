package msglimit

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message"

	"mailroom/internal/testkit/hostile"
)

// nested is a message of depth multiparts one in the next, with boundary
// b(level) unless same, when every level has the boundary "x".
func nested(depth int, same bool) string {
	var b strings.Builder
	bnd := func(i int) string {
		if same {
			return "x"
		}
		return fmt.Sprintf("b%d", i)
	}
	b.WriteString("Subject: n\r\n")
	for i := range depth {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=%q\r\n\r\n--%s\r\n", bnd(i), bnd(i))
	}
	b.WriteString("Content-Type: text/plain\r\n\r\nx\r\n")
	for i := depth - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "--%s--\r\n", bnd(i))
	}
	return b.String()
}

// innermost is nested(MaxDepth) with its text part replaced by part.
func innermost(part string) string {
	return strings.Replace(nested(MaxDepth, false), "Content-Type: text/plain\r\n\r\nx\r\n", part, 1)
}

// siblings is a multipart of n text parts.
func siblings(n int) string {
	var b strings.Builder
	b.WriteString("Content-Type: multipart/mixed; boundary=s\r\n\r\n")
	for range n {
		b.WriteString("--s\r\nContent-Type: text/plain\r\n\r\nx\r\n")
	}
	b.WriteString("--s--\r\n")
	return b.String()
}

func TestCheck(t *testing.T) {
	folded := func(n int) string {
		return "Subject: a\r\nX-Long: x" + strings.Repeat("\r\n folded-line", n/14) + "\r\n\r\nbody\r\n"
	}
	partHeader := "Content-Type: multipart/mixed; boundary=p\r\n\r\n--p\r\nContent-Type: text/plain\r\nX-Long: x" +
		strings.Repeat("\r\n folded-line", MaxHeaderBytes/13) + "\r\n\r\nbody\r\n--p--\r\n"
	for _, tc := range []struct {
		name string
		raw  string
		want error
	}{
		{"plain", "Subject: hi\r\n\r\nbody\r\n", nil},
		{"empty", "", nil},
		{"header only", "Subject: hi\r\n", nil},
		{"header just under", folded(MaxHeaderBytes - 200), nil},
		{"header over", folded(MaxHeaderBytes + 100), ErrHeaderTooLarge},
		{"a part's header over", partHeader, ErrHeaderTooLarge},
		{"a big body is no header", "Subject: hi\r\n\r\n" + strings.Repeat("body line\r\n", MaxHeaderBytes/5), nil},
		{"depth at the limit", nested(MaxDepth, false), nil},
		{"depth over", nested(MaxDepth+1, false), ErrTooDeep},
		// The outer reader ends the part at the first "--x": a repeated
		// boundary nests nothing.
		{"one boundary at every level", nested(MaxDepth+10, true), nil},
		{"parts at the limit", siblings(MaxParts), nil},
		{"parts over", siblings(MaxParts + 1), ErrTooManyParts},
		// Without a boundary parameter the delimiter is "--", which an
		// outer multipart without one takes first: such levels nest once.
		{"no boundary parameter is a multipart", innermost("Content-Type: multipart/mixed\r\n\r\n--\r\n"), ErrTooDeep},
		{"an unparsable type is still multipart", innermost("Content-Type: multipart/mixed; boundary=\"\r\n\r\n--\r\n"), ErrTooDeep},
		{"repeated empty boundaries nest once", strings.Repeat("Content-Type: multipart/mixed\r\n\r\n--\r\n", MaxDepth+10), nil},
		{"LF line ends", strings.ReplaceAll(nested(MaxDepth+1, false), "\r\n", "\n"), ErrTooDeep},
		{"the ARF of issue #38", string(hostile.NestedARF("fbl@x", 10000)), ErrTooDeep},
		{"the folded header of issue #38", string(hostile.FoldedHeader("a@x", 9<<20)), ErrHeaderTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check([]byte(tc.raw)); !errors.Is(err, tc.want) {
				t.Fatalf("Check = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestCheckAttackPayloadsCost: the payloads of issue #38 are refused in
// well under 200 ms and 50 MB, before any parser reads them.
func TestCheckAttackPayloadsCost(t *testing.T) {
	for _, raw := range [][]byte{hostile.NestedARF("fbl@x", 10000), hostile.FoldedHeader("a@x", 9<<20)} {
		var err error
		c := hostile.Measure(func() { err = Check(raw) })
		t.Logf("%d bytes: %v in %s", len(raw), err, c)
		if err == nil || c.Time > 200*time.Millisecond || c.Alloc > 50<<20 {
			t.Fatalf("%d bytes: %v in %s", len(raw), err, c)
		}
	}
}

// budget is what Check may spend: one pass, a small copy of the
// Content-Type values and one map of boundaries.
var budget = hostile.Budget{Time: 500 * time.Millisecond, TimePerByte: 100 * time.Nanosecond, Alloc: 64 << 10, AllocPerByte: 4}

// FuzzCheck: Check returns within a time and memory budget linear in the
// input, and a message it lets through never takes go-message past the
// limits: its multiparts nest at most MaxDepth deep and hold at most
// MaxParts parts.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"Subject: hi\r\n\r\nbody", nested(3, false), nested(5, true), siblings(4),
		"Content-Type: multipart/mixed\r\n\r\n--\r\nContent-Type: multipart/mixed\r\n\r\n--\r\n",
		"Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n--a\r\nx\r\n--a--\r\n",
		"Content-Type: multipart/mixed; boundary==?utf-8?q?z?=\r\n\r\n--z\r\n\r\n--z--",
	} {
		f.Add([]byte(s))
	}
	f.Add(hostile.NestedARF("fbl@x", 10000))
	f.Add(hostile.FoldedHeader("a@x", 1<<20))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var err error
		c := hostile.Measure(func() { err = Check(raw) })
		if berr := budget.Check(c, len(raw)); berr != nil {
			t.Fatal(berr)
		}
		if err != nil {
			return
		}
		e, _ := message.Read(strings.NewReader(string(raw)))
		if e == nil {
			return
		}
		parts := 0
		var walk func(e *message.Entity, depth int)
		walk = func(e *message.Entity, depth int) {
			mr := e.MultipartReader()
			if mr == nil {
				return
			}
			if depth+1 > MaxDepth {
				t.Fatalf("go-message nests past %d levels", MaxDepth)
			}
			for {
				p, err := mr.NextPart()
				if p == nil || err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
					return
				}
				if parts++; parts > MaxParts {
					t.Fatalf("go-message reads past %d parts", MaxParts)
				}
				walk(p, depth+1)
				_, _ = io.Copy(io.Discard, p.Body)
			}
		}
		walk(e, 0)
	})
}

// FuzzCheckSkip: Check, jumping over bodies to the next line starting
// "--", decides as reading every line does.
func FuzzCheckSkip(f *testing.F) {
	for _, s := range []string{
		"Subject: hi\r\n\r\nbody", nested(3, false), nested(5, true), siblings(4),
		"Content-Type: multipart/mixed\r\n\r\n--\r\nContent-Type: multipart/mixed\r\n\r\n--\r\n",
		"Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n--a\r\nx\r\n--a--\r\n",
		"Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\n\r\nx\n--a\n--b\r\n--a--\r\n--a\r\n",
		"Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\n\r\n--a\r\n\n--a\r\n" + strings.Repeat("--a\r\n", 1100),
	} {
		f.Add([]byte(s))
	}
	f.Add(hostile.NestedARF("fbl@x", 2000))
	f.Fuzz(func(t *testing.T, raw []byte) {
		skipBodies = false
		want := Check(raw)
		skipBodies = true
		if got := Check(raw); got != want {
			t.Fatalf("skipping bodies: %v, reading every line: %v", got, want)
		}
	})
}
