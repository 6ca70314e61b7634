package smtp

import (
	"bytes"
	"errors"
	"io"
)

var ErrTooLongLine = errors.New("smtp: too long a line in input stream")

// lineLimitReader reads from the underlying Reader but restricts
// line length of lines in input stream to a certain length.
//
// If line length exceeds the limit - Read returns ErrTooLongLine
type lineLimitReader struct {
	R         io.Reader
	LineLimit int

	curLineLength int
}

func (r *lineLimitReader) Read(b []byte) (int, error) {
	if r.curLineLength > r.LineLimit && r.LineLimit > 0 {
		return 0, ErrTooLongLine
	}

	n, err := r.R.Read(b)
	if err != nil {
		return n, err
	}

	if r.LineLimit == 0 {
		return n, nil
	}

	// Whole runs between newlines are counted at once, with the lengths the
	// byte by byte count had: a '\n' starts the next line at length 1, and
	// on the first byte past the limit the count stops at that byte
	// (FuzzLineLimitReader holds it to the byte by byte count).
	p := b[:n]
	for {
		i := bytes.IndexByte(p, '\n')
		run := len(p)
		if i >= 0 {
			run = i
		}
		if run > 0 && r.curLineLength+run > r.LineLimit {
			if r.curLineLength < r.LineLimit {
				r.curLineLength = r.LineLimit
			}
			r.curLineLength++
			return 0, ErrTooLongLine
		}
		r.curLineLength += run
		if i < 0 {
			return n, nil
		}
		r.curLineLength = 1
		if r.curLineLength > r.LineLimit {
			return 0, ErrTooLongLine
		}
		p = p[i+1:]
	}
}
