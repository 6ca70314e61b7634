package smtp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

type EnhancedCode [3]int

// SMTPError specifies the error code, enhanced error code (if any) and
// message returned by the server.
type SMTPError struct {
	Code         int
	EnhancedCode EnhancedCode
	Message      string
}

// NoEnhancedCode is used to indicate that enhanced error code should not be
// included in response.
//
// Note that RFC 2034 requires an enhanced code to be included in all 2xx, 4xx
// and 5xx responses. This constant is exported for use by extensions, you
// should probably use EnhancedCodeNotSet instead.
var NoEnhancedCode = EnhancedCode{-1, -1, -1}

// EnhancedCodeNotSet is a nil value of EnhancedCode field in SMTPError, used
// to indicate that backend failed to provide enhanced status code. X.0.0 will
// be used (X is derived from error code).
var EnhancedCodeNotSet = EnhancedCode{0, 0, 0}

func (err *SMTPError) Error() string {
	s := fmt.Sprintf("SMTP error %03d", err.Code)
	if err.Message != "" {
		s += ": " + err.Message
	}
	return s
}

func (err *SMTPError) Temporary() bool {
	return err.Code/100 == 4
}

var ErrDataTooLarge = &SMTPError{
	Code:         552,
	EnhancedCode: EnhancedCode{5, 3, 4},
	Message:      "Maximum message size exceeded",
}

type dataReader struct {
	r     *bufio.Reader
	state int

	limited bool
	n       int64 // Maximum bytes remaining
}

func newDataReader(c *Conn) *dataReader {
	dr := &dataReader{
		r: c.text.R,
	}

	if c.server.MaxMessageBytes > 0 {
		dr.limited = true
		dr.n = int64(c.server.MaxMessageBytes)
	}

	return dr
}

// States of the dataReader's machine, as in net/textproto's dotReader.
const (
	stateBeginLine = iota // beginning of line; initial state; must be zero
	stateDot              // read . at beginning of line
	stateDotCR            // read .\r at beginning of line
	stateCR               // read \r (possibly at end of line)
	stateData             // reading data in middle of line
	stateEOF              // reached .\r\n end marker line
)

func (r *dataReader) Read(b []byte) (n int, err error) {
	if r.limited {
		if r.n <= 0 {
			return 0, ErrDataTooLarge
		}
		if int64(len(b)) > r.n {
			b = b[0:r.n]
		}
	}

	// The state machine below is net/textproto's, with only one modification
	// to not rewrite CRLF -> LF. It used to be fed one ReadByte at a time; the
	// bytes in the middle of a line, which it copies unchanged, are now copied
	// as whole runs from bufio.Reader's buffer, and only the bytes around a
	// line start go through the machine. Output, errors and the bytes consumed
	// are the same as byte by byte (FuzzDataReader holds it to that).
	for n < len(b) && r.state != stateEOF {
		if r.r.Buffered() == 0 {
			// ReadByte fills the buffer and reports errors as before.
			var c byte
			c, err = r.r.ReadByte()
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				break
			}
			if r.step(c) {
				b[n] = c
				n++
			}
			continue
		}
		buf, _ := r.r.Peek(r.r.Buffered())
		i := 0 // bytes of buf consumed
		for i < len(buf) && n < len(b) && r.state != stateEOF {
			if r.state == stateData {
				// Up to and including the next '\r', every byte is data.
				run := buf[i:]
				if len(run) > len(b)-n {
					run = run[:len(b)-n]
				}
				if k := bytes.IndexByte(run, '\r'); k >= 0 {
					run = run[:k+1]
					r.state = stateCR
				}
				n += copy(b[n:], run)
				i += len(run)
				continue
			}
			c := buf[i]
			i++
			if r.step(c) {
				b[n] = c
				n++
			}
		}
		// The last byte is taken with ReadByte so that the bufio.Reader is
		// left as byte by byte reading left it (UnreadByte works).
		r.r.Discard(i - 1)
		r.r.ReadByte()
	}
	if err == nil && r.state == stateEOF {
		err = io.EOF
	}

	if r.limited {
		r.n -= int64(n)
	}
	return
}

// step moves the state machine over c and reports whether c is part of the
// message (false for a leading dot and the end marker's bytes).
func (r *dataReader) step(c byte) bool {
	switch r.state {
	case stateBeginLine:
		if c == '.' {
			r.state = stateDot
			return false
		}
		if c == '\r' {
			r.state = stateCR
			break
		}
		r.state = stateData
	case stateDot:
		if c == '\r' {
			r.state = stateDotCR
			return false
		}
		r.state = stateData
	case stateDotCR:
		if c == '\n' {
			r.state = stateEOF
			return false
		}
		r.state = stateData
	case stateCR:
		if c == '\n' {
			r.state = stateBeginLine
			break
		}
		r.state = stateData
	case stateData:
		if c == '\r' {
			r.state = stateCR
		}
	}
	return true
}
