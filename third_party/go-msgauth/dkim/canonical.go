package dkim

import (
	"bytes"
	"io"
	"strings"
)

// Canonicalization is a canonicalization algorithm.
type Canonicalization string

const (
	CanonicalizationSimple  Canonicalization = "simple"
	CanonicalizationRelaxed                  = "relaxed"
)

type canonicalizer interface {
	CanonicalizeHeader(s string) string
	CanonicalizeBody(w io.Writer) io.WriteCloser
}

var canonicalizers = map[Canonicalization]canonicalizer{
	CanonicalizationSimple:  new(simpleCanonicalizer),
	CanonicalizationRelaxed: new(relaxedCanonicalizer),
}

// crlfFixer fixes any lone LF without a preceding CR; cr tells whether
// the last byte it was given was a CR. Mailroom's copy: v0.7.0's Fix went
// byte by byte into a copy of its input; writeFixed writes the runs
// between the LFs that need a CR, appendFixed appends (see README).
type crlfFixer struct {
	cr bool
}

// writeFixed writes b to w with a CR added before each LF that has none,
// without a copy: the runs
// between the LFs that need a CR are written as they are (one write for a
// body whose lines all end in CRLF).
func (cf *crlfFixer) writeFixed(w io.Writer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	start := 0
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			break
		}
		j += i
		prevCR := cf.cr
		if j > 0 {
			prevCR = b[j-1] == '\r'
		}
		if !prevCR {
			if _, err := w.Write(b[start:j]); err != nil {
				return err
			}
			if _, err := w.Write(cr); err != nil {
				return err
			}
			start = j
		}
		i = j + 1
	}
	cf.cr = b[len(b)-1] == '\r'
	if start < len(b) {
		_, err := w.Write(b[start:])
		return err
	}
	return nil
}

var cr = []byte{'\r'}

// appendFixed appends b to dst with a CR added before each LF that has
// none.
func (cf *crlfFixer) appendFixed(dst, b []byte) []byte {
	for _, ch := range b {
		if ch == '\n' && !cf.cr {
			dst = append(dst, '\r')
		}
		cf.cr = ch == '\r'
		dst = append(dst, ch)
	}
	return dst
}

type simpleCanonicalizer struct{}

func (c *simpleCanonicalizer) CanonicalizeHeader(s string) string {
	return s
}

// simpleBodyCanonicalizer holds back the CRLFs at the end of what it was
// given (a body's trailing empty lines are not hashed) and writes the rest
// through. Mailroom's copy: v0.7.0 prepended the held bytes to each write
// and ran the whole through the fixer, two copies of a body written at once
// (verification writes it at once); now only the trailing run of CRs and
// LFs is copied (see README).
type simpleBodyCanonicalizer struct {
	w         io.Writer
	crlfBuf   []byte // held: fixed, (CRLF)* and an optional lone CR
	crlfFixer crlfFixer
}

func (c *simpleBodyCanonicalizer) Write(b []byte) (int, error) {
	written := len(b)
	// b[k:] is b's trailing run of CRs and LFs; what comes before is
	// written with the bytes held so far.
	k := len(b)
	for k > 0 && (b[k-1] == '\r' || b[k-1] == '\n') {
		k--
	}
	if k > 0 {
		if len(c.crlfBuf) > 0 {
			if _, err := c.w.Write(c.crlfBuf); err != nil {
				return written, err
			}
			c.crlfBuf = c.crlfBuf[:0]
		}
		if err := c.crlfFixer.writeFixed(c.w, b[:k]); err != nil {
			return written, err
		}
	}
	c.crlfBuf = c.crlfFixer.appendFixed(c.crlfBuf, b[k:])

	end := len(c.crlfBuf)
	// If it ends with \r, maybe the next write will begin with \n
	if end > 0 && c.crlfBuf[end-1] == '\r' {
		end--
	}
	// Keep all \r\n sequences
	for end >= 2 && c.crlfBuf[end-2] == '\r' && c.crlfBuf[end-1] == '\n' {
		end -= 2
	}
	if end > 0 {
		if _, err := c.w.Write(c.crlfBuf[:end]); err != nil {
			return written, err
		}
		c.crlfBuf = c.crlfBuf[:copy(c.crlfBuf, c.crlfBuf[end:])]
	}
	return written, nil
}

func (c *simpleBodyCanonicalizer) Close() error {
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

func (c *simpleCanonicalizer) CanonicalizeBody(w io.Writer) io.WriteCloser {
	return &simpleBodyCanonicalizer{w: w}
}

type relaxedCanonicalizer struct{}

func (c *relaxedCanonicalizer) CanonicalizeHeader(s string) string {
	k, v, ok := strings.Cut(s, ":")
	if !ok {
		return strings.TrimSpace(strings.ToLower(s)) + ":" + crlf
	}

	k = strings.TrimSpace(strings.ToLower(k))
	v = strings.Join(strings.FieldsFunc(v, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}), " ")
	return k + ":" + v + crlf
}

// relaxedBodyCanonicalizer folds whitespace and drops trailing empty
// lines. Mailroom's copy: v0.7.0 copied each write through the fixer and then
// into a new slice as long; the CR before a lone LF is added in the same
// pass now, and the output goes through a fixed buffer (see README).
type relaxedBodyCanonicalizer struct {
	w         io.Writer
	crlfBuf   []byte
	wsp       bool
	written   bool
	crlfFixer crlfFixer
	buf       [2048]byte
}

func (c *relaxedBodyCanonicalizer) Write(b []byte) (int, error) {
	written := len(b)
	canonical := c.buf[:0]
	for i := 0; i < len(b); {
		ch := b[i]
		if ch == ' ' || ch == '\t' {
			c.wsp = true
			c.crlfFixer.cr = false
			i++
			continue
		}
		if ch == '\r' || ch == '\n' {
			c.wsp = false
			if ch == '\n' && !c.crlfFixer.cr {
				c.crlfBuf = append(c.crlfBuf, '\r')
			}
			c.crlfFixer.cr = ch == '\r'
			c.crlfBuf = append(c.crlfBuf, ch)
			i++
			continue
		}
		// A run of other bytes, written as it is after the line ends
		// and the space before it.
		j := i + 1
		for j < len(b) && !relaxedSpace[b[j]] {
			j++
		}
		run := b[i:j]
		i = j
		c.crlfFixer.cr = false
		if len(canonical)+len(c.crlfBuf)+1 > len(c.buf) {
			if err := c.flush(canonical); err != nil {
				return written, err
			}
			canonical = c.buf[:0]
		}
		if len(c.crlfBuf) > 0 {
			if len(c.crlfBuf)+1 > len(c.buf) {
				// A long run of line ends: written as it is.
				if err := c.flush(c.crlfBuf); err != nil {
					return written, err
				}
			} else {
				canonical = append(canonical, c.crlfBuf...)
			}
			c.crlfBuf = c.crlfBuf[:0]
		}
		if c.wsp {
			canonical = append(canonical, ' ')
			c.wsp = false
		}
		if len(canonical)+len(run) > len(c.buf) {
			if err := c.flush(canonical); err != nil {
				return written, err
			}
			canonical = c.buf[:0]
			if len(run) > len(c.buf)/2 {
				if err := c.flush(run); err != nil {
					return written, err
				}
				continue
			}
		}
		canonical = append(canonical, run...)
	}
	return written, c.flush(canonical)
}

// relaxedSpace marks the bytes relaxed body canonicalization changes or
// holds back.
var relaxedSpace = [256]bool{' ': true, '\t': true, '\r': true, '\n': true}

func (c *relaxedBodyCanonicalizer) flush(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	c.written = true
	_, err := c.w.Write(b)
	return err
}

func (c *relaxedBodyCanonicalizer) Close() error {
	if c.written {
		if _, err := c.w.Write([]byte(crlf)); err != nil {
			return err
		}
	}
	return nil
}

func (c *relaxedCanonicalizer) CanonicalizeBody(w io.Writer) io.WriteCloser {
	return &relaxedBodyCanonicalizer{w: w}
}

type limitedWriter struct {
	W io.Writer
	N int64
}

func (w *limitedWriter) Write(b []byte) (int, error) {
	if w.N <= 0 {
		return len(b), nil
	}

	skipped := 0
	if int64(len(b)) > w.N {
		b = b[:w.N]
		skipped = int(int64(len(b)) - w.N)
	}

	n, err := w.W.Write(b)
	w.N -= int64(n)
	return n + skipped, err
}
