package dkim

import (
	"bytes"
	"io"
	"testing"
)

// simpleBodyV07 and relaxedBodyV07 are go-msgauth v0.7.0's body
// canonicalizers, verbatim but for the fixer's name: the oracles the
// copy-free ones are held to.
type simpleBodyV07 struct {
	w         io.Writer
	crlfBuf   []byte
	crlfFixer crlfFixerV07
}

func (c *simpleBodyV07) Write(b []byte) (int, error) {
	written := len(b)
	b = append(c.crlfBuf, b...)

	b = c.crlfFixer.Fix(b)

	end := len(b)
	// If it ends with \r, maybe the next write will begin with \n
	if end > 0 && b[end-1] == '\r' {
		end--
	}
	// Keep all \r\n sequences
	for end >= 2 {
		prev := b[end-2]
		cur := b[end-1]
		if prev != '\r' || cur != '\n' {
			break
		}
		end -= 2
	}

	c.crlfBuf = b[end:]

	var err error
	if end > 0 {
		_, err = c.w.Write(b[:end])
	}
	return written, err
}

func (c *simpleBodyV07) Close() error {
	// Flush crlfBuf if it ends with a single \r (without a matching \n)
	if len(c.crlfBuf) > 0 && c.crlfBuf[len(c.crlfBuf)-1] == '\r' {
		if _, err := c.w.Write(c.crlfBuf); err != nil {
			return err
		}
	}
	c.crlfBuf = nil

	if _, err := c.w.Write([]byte(crlf)); err != nil {
		return err
	}
	return nil
}

type relaxedBodyV07 struct {
	w         io.Writer
	crlfBuf   []byte
	wsp       bool
	written   bool
	crlfFixer crlfFixerV07
}

func (c *relaxedBodyV07) Write(b []byte) (int, error) {
	written := len(b)

	b = c.crlfFixer.Fix(b)

	canonical := make([]byte, 0, len(b))
	for _, ch := range b {
		if ch == ' ' || ch == '\t' {
			c.wsp = true
		} else if ch == '\r' || ch == '\n' {
			c.wsp = false
			c.crlfBuf = append(c.crlfBuf, ch)
		} else {
			if len(c.crlfBuf) > 0 {
				canonical = append(canonical, c.crlfBuf...)
				c.crlfBuf = c.crlfBuf[:0]
			}
			if c.wsp {
				canonical = append(canonical, ' ')
				c.wsp = false
			}

			canonical = append(canonical, ch)
		}
	}

	if !c.written && len(canonical) > 0 {
		c.written = true
	}

	_, err := c.w.Write(canonical)
	return written, err
}

func (c *relaxedBodyV07) Close() error {
	if c.written {
		if _, err := c.w.Write([]byte(crlf)); err != nil {
			return err
		}
	}
	return nil
}

// canonicalizeIn writes in to a body canonicalizer in writes of varying
// sizes from step (0: all at once, as verification writes a body).
func canonicalizeIn(wc io.WriteCloser, in []byte, step uint8) {
	n := int(step % 16)
	for rest := in; len(rest) > 0; {
		k := len(rest)
		if n > 0 && n < k {
			k = n
		}
		wc.Write(rest[:k])
		rest = rest[k:]
		if n > 0 {
			n = n*7%13 + 1 // vary the write sizes
		}
	}
	wc.Close()
}

// FuzzBodyCanonicalizers: any body, written at once or in writes of any
// sizes, canonicalizes as v0.7.0's simple and relaxed canonicalizers do.
func FuzzBodyCanonicalizers(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb\n", "\n\n\r\r\n", "\r", "x\r", "\r\n\r", "line\nline\r\nend\r\n\r\n",
		"a  \t b \r\n\r\n\r\n", " \r\n x\r\r\n\n", string(bytes.Repeat([]byte("word  \r\n"), 600)), string(bytes.Repeat([]byte("\n"), 3000)) + "x"} {
		for _, step := range []uint8{0, 1, 3} {
			f.Add([]byte(s), step)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		var got, want bytes.Buffer
		canonicalizeIn(new(simpleCanonicalizer).CanonicalizeBody(&got), in, step)
		canonicalizeIn(&simpleBodyV07{w: &want}, in, step)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("simple(%q) = %q, v0.7.0 %q", in, got.Bytes(), want.Bytes())
		}
		got.Reset()
		want.Reset()
		canonicalizeIn(new(relaxedCanonicalizer).CanonicalizeBody(&got), in, step)
		canonicalizeIn(&relaxedBodyV07{w: &want}, in, step)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("relaxed(%q) = %q, v0.7.0 %q", in, got.Bytes(), want.Bytes())
		}
	})
}

// TestBodyCanonicalizersAllocate: a 160 KB body written at once (as
// verification writes it) is hashed without a copy of it: v0.7.0 made two
// (simple) or two (relaxed).
func TestBodyCanonicalizersAllocate(t *testing.T) {
	body := bytes.Repeat([]byte("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.\r\n"), 2000)
	for name, c := range map[string]canonicalizer{"simple": new(simpleCanonicalizer), "relaxed": new(relaxedCanonicalizer)} {
		var bytesAlloc uint64
		allocs := testing.AllocsPerRun(5, func() {
			wc := c.CanonicalizeBody(io.Discard)
			wc.Write(body)
			wc.Close()
		})
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				wc := c.CanonicalizeBody(io.Discard)
				wc.Write(body)
				wc.Close()
			}
		})
		bytesAlloc = uint64(res.AllocedBytesPerOp())
		t.Logf("%s: %.0f allocations, %d bytes", name, allocs, bytesAlloc)
		if bytesAlloc > 4096 {
			t.Errorf("%s: %d bytes allocated for a %d-byte body, want no copy of it", name, bytesAlloc, len(body))
		}
	}
}

func BenchmarkBodyCanonicalizers(b *testing.B) {
	body := bytes.Repeat([]byte("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.\r\n"), 2000)
	for _, c := range []struct {
		name string
		new  func() io.WriteCloser
	}{
		{"simple/v0.7.0", func() io.WriteCloser { return &simpleBodyV07{w: io.Discard} }},
		{"simple", func() io.WriteCloser { return new(simpleCanonicalizer).CanonicalizeBody(io.Discard) }},
		{"relaxed/v0.7.0", func() io.WriteCloser { return &relaxedBodyV07{w: io.Discard} }},
		{"relaxed", func() io.WriteCloser { return new(relaxedCanonicalizer).CanonicalizeBody(io.Discard) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				wc := c.new()
				wc.Write(body)
				wc.Close()
			}
		})
	}
}
