package dkim

import (
	"bytes"
	"io"
	"testing"
)

// crlfFixerV07 is go-msgauth v0.7.0's crlfFixer, verbatim: the oracle the
// run-copying Fix is held to.
type crlfFixerV07 struct {
	cr bool
}

func (cf *crlfFixerV07) Fix(b []byte) []byte {
	res := make([]byte, 0, len(b))
	for _, ch := range b {
		prevCR := cf.cr
		cf.cr = false
		switch ch {
		case '\r':
			cf.cr = true
		case '\n':
			if !prevCR {
				res = append(res, '\r')
			}
		}
		res = append(res, ch)
	}
	return res
}

// FuzzCRLFFixer: any input, cut into writes at any sizes, comes out of
// writeFixed and appendFixed (taking turns) as out of v0.7.0's Fix, with
// the same state carried between writes.
func FuzzCRLFFixer(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb\n", "\n\n\r\r\n", "\r", "x\r", "\r\n\r", "line\nline\r\nend"} {
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		n := int(step%16) + 1
		var got, want bytes.Buffer
		var a crlfFixer
		var b crlfFixerV07
		for rest := in; len(rest) > 0; {
			k := n
			if k > len(rest) {
				k = len(rest)
			}
			if n%2 == 0 {
				if err := a.writeFixed(&got, rest[:k]); err != nil {
					t.Fatal(err)
				}
			} else {
				got.Write(a.appendFixed(nil, rest[:k]))
			}
			want.Write(b.Fix(rest[:k]))
			if a.cr != b.cr {
				t.Fatalf("state after %q: %v, v0.7.0 %v", rest[:k], a.cr, b.cr)
			}
			rest = rest[k:]
			n = n*7%13 + 1 // vary the write sizes
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("fixed %q: %q, v0.7.0 %q", in, got.Bytes(), want.Bytes())
		}
	})
}

func BenchmarkCRLFFixer(b *testing.B) {
	msg := bytes.Repeat([]byte("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.\r\n"), 2000)
	b.Run("v0.7.0", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for i := 0; i < b.N; i++ {
			var cf crlfFixerV07
			cf.Fix(msg)
		}
	})
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for i := 0; i < b.N; i++ {
			var cf crlfFixer
			cf.writeFixed(io.Discard, msg)
		}
	})
}
