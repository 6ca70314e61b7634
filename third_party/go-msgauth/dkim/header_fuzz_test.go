package dkim

import (
	"bufio"
	"bytes"
	"fmt"
	"net/textproto"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readHeaderV07 is go-msgauth v0.7.0's readHeader, verbatim: the oracle
// the buffered readHeader is held to.
func readHeaderV07(r *bufio.Reader) (header, error) {
	tr := textproto.NewReader(r)

	var h header
	for {
		l, err := tr.ReadLine()
		if err != nil {
			return h, fmt.Errorf("failed to read header: %v", err)
		}

		if len(l) == 0 {
			break
		} else if len(h) > 0 && (l[0] == ' ' || l[0] == '\t') {
			// This is a continuation line
			h[len(h)-1] += l + crlf
		} else {
			h = append(h, l+crlf)
		}
	}

	return h, nil
}

// foldedHeader is a header block of about size bytes whose one field is
// folded over lines of lineLen bytes: the 9 MB one of issue #38 cost
// v0.7.0's readHeader 11 s.
func foldedHeader(size, lineLen int) []byte {
	var b bytes.Buffer
	b.WriteString("From: a@b.example\r\nX-Long: start")
	cont := "\r\n " + strings.Repeat("f", lineLen-1)
	for b.Len() < size {
		b.WriteString(cont)
	}
	b.WriteString("\r\nSubject: after\r\n\r\nbody\r\n")
	return b.Bytes()
}

// readCost reads in's header once and returns the time and bytes it took.
func readCost(in []byte) (header, error, time.Duration, uint64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	h, err := readHeader(bufio.NewReader(bytes.NewReader(in)))
	d := time.Since(start)
	runtime.ReadMemStats(&m1)
	return h, err, d, m1.TotalAlloc - m0.TotalAlloc
}

// TestReadHeaderFoldedLinear: the 9 MB folded header of issue #38 is read
// in a fraction of a second and a few copies of its size (v0.7.0: 47 s
// and 42 GB here; 11 s in the issue), as is one folded over 9-byte lines,
// where the appends were worst (v0.7.0 ran past ten minutes).
func TestReadHeaderFoldedLinear(t *testing.T) {
	for _, lineLen := range []int{997, 7} {
		in := foldedHeader(9<<20, lineLen)
		h, err, d, alloc := readCost(in)
		t.Logf("%d bytes in lines of %d: %s, %.1f MB allocated", len(in), lineLen+2, d, float64(alloc)/(1<<20))
		if err != nil || len(h) != 3 || h[2] != "Subject: after\r\n" {
			t.Fatalf("read %d fields, %v", len(h), err)
		}
		// The field is a copy of the input, grown by append (1.25x steps
		// past 256 KB), then made a string: about 6x the input.
		if d > 500*time.Millisecond || alloc > 8*uint64(len(in)) {
			t.Fatalf("over the budget of 500 ms and %d MB", 8*len(in)>>20)
		}
	}
}

// FuzzReadHeader: any input reads as v0.7.0's readHeader reads it (the
// same fields, an error alike), within a time and memory budget linear in
// its size.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{
		"", "\r\n", "From: a\r\n\r\n", " lead\r\nA: b\r\n\r\n", "A: b\r\n c\r\n\td\r\nE: f\r\n\r\nbody",
		"A: b\nB: c\n\n", "A: b\r\n", "A: b\r\n c", "A\r\n \r\n\r\n", "A: " + strings.Repeat("x", 5000) + "\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(foldedHeader(256<<10, 997))
	f.Add(foldedHeader(2<<20, 7)) // too big for the oracle: only the budget
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err, d, alloc := readCost(in)
		// Allowed: the fields (a copy of the input), the field buffer's
		// doublings and the reader, several times over; and 1 s of
		// fuzzing-worker slack.
		if maxAlloc := 64<<10 + 8*uint64(len(in)); alloc > maxAlloc {
			t.Fatalf("%d bytes allocated %d, budget %d", len(in), alloc, maxAlloc)
		}
		if maxTime := time.Second + time.Duration(len(in))*100*time.Nanosecond; d > maxTime {
			t.Fatalf("%d bytes took %s, budget %s", len(in), d, maxTime)
		}
		if len(in) > 1<<20 {
			return
		}
		want, werr := readHeaderV07(bufio.NewReader(bytes.NewReader(in)))
		if (err == nil) != (werr == nil) || !reflect.DeepEqual(h, want) && (len(h) > 0 || len(want) > 0) {
			t.Fatalf("readHeader(%q) = %q, %v; v0.7.0 %q, %v", in, h, err, want, werr)
		}
	})
}
