package smtp

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math/rand"
	"strings"
	"testing"
)

// byteDataReader is dataReader.Read as go-smtp v0.25.1 has it, one ReadByte
// per byte: the oracle FuzzDataReader holds the run-copying Read to.
type byteDataReader struct {
	r     *bufio.Reader
	state int

	limited bool
	n       int64 // Maximum bytes remaining
}

func (r *byteDataReader) Read(b []byte) (n int, err error) {
	if r.limited {
		if r.n <= 0 {
			return 0, ErrDataTooLarge
		}
		if int64(len(b)) > r.n {
			b = b[0:r.n]
		}
	}

	// Code below is taken from net/textproto with only one modification to
	// not rewrite CRLF -> LF.

	// Run data through a simple state machine to
	// elide leading dots and detect End-of-Data (<CR><LF>.<CR><LF>) line.
	const (
		stateBeginLine = iota // beginning of line; initial state; must be zero
		stateDot              // read . at beginning of line
		stateDotCR            // read .\r at beginning of line
		stateCR               // read \r (possibly at end of line)
		stateData             // reading data in middle of line
		stateEOF              // reached .\r\n end marker line
	)
	for n < len(b) && r.state != stateEOF {
		var c byte
		c, err = r.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			break
		}
		switch r.state {
		case stateBeginLine:
			if c == '.' {
				r.state = stateDot
				continue
			}
			if c == '\r' {
				r.state = stateCR
				break
			}
			r.state = stateData
		case stateDot:
			if c == '\r' {
				r.state = stateDotCR
				continue
			}
			r.state = stateData
		case stateDotCR:
			if c == '\n' {
				r.state = stateEOF
				continue
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
		b[n] = c
		n++
	}
	if err == nil && r.state == stateEOF {
		err = io.EOF
	}

	if r.limited {
		r.n -= int64(n)
	}
	return
}

// byteLineLimitReader is lineLimitReader.Read as go-smtp v0.25.1 has it,
// counting byte by byte: the oracle of FuzzLineLimitReader.
type byteLineLimitReader struct {
	R         io.Reader
	LineLimit int

	curLineLength int
}

func (r *byteLineLimitReader) Read(b []byte) (int, error) {
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

	for _, chr := range b[:n] {
		if chr == '\n' {
			r.curLineLength = 0
		}
		r.curLineLength++

		if r.curLineLength > r.LineLimit {
			return 0, ErrTooLongLine
		}
	}

	return n, nil
}

var errBroken = errors.New("connection broken")

// chunkReader hands out data in the sizes of chunks (in turn; a 0 is an
// empty read, but never two in a row, which would only test bufio's
// io.ErrNoProgress and keep io.ReadAll waiting), then fails: with errBroken once if broken, with io.EOF from
// then on. With early, the error comes with the last bytes.
type chunkReader struct {
	data          []byte
	chunks        []byte
	k             int
	broken, early bool
	empty         bool // the last read was empty
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.broken {
			r.broken = false
			return 0, errBroken
		}
		return 0, io.EOF
	}
	size := len(r.data)
	if len(r.chunks) > 0 {
		size = int(r.chunks[r.k%len(r.chunks)])
		r.k++
	}
	if size == 0 && r.empty {
		size = 1
	}
	r.empty = size == 0
	if size > len(r.data) {
		size = len(r.data)
	}
	n := copy(p, r.data[:size])
	r.data = r.data[n:]
	if len(r.data) == 0 && r.early {
		r.early = false
		if r.broken {
			r.broken = false
			return n, errBroken
		}
		return n, io.EOF
	}
	return n, nil
}

// readSize turns a fuzzed byte into a Read buffer size from 1 byte to
// about 16 KB, small sizes the likeliest.
func readSize(sizes []byte, k int) int {
	if len(sizes) == 0 {
		return 4096
	}
	s := int(sizes[k%len(sizes)])
	if s < 200 {
		return 1 + s
	}
	return 1 + (s-200)*300
}

func FuzzDataReader(f *testing.F) {
	for _, s := range []string{
		"Subject: hi\r\n\r\nbody\r\n.\r\nMAIL FROM:<a@b>\r\n",
		"..leading dot\r\n.x\r\n.\r\n",
		".\r\n",
		"no end marker\r\n",
		"bare\nlf\n.\n.\r\n",
		".\rX\r\n\r\r\n.\r\n.\r\n",
		"a\r\r\n.\r\nb\r\n.\r\n",
		"\r\n.\r\r\n.\r\n",
		string(testMessage(2000)),
	} {
		f.Add([]byte(s), []byte{0, 3, 250}, []byte{7, 0, 200}, uint16(0), int16(0), byte(0))
		f.Add([]byte(s), []byte{1}, []byte{}, uint16(5), int16(7), byte(3))
	}
	f.Fuzz(func(t *testing.T, input, sizes, chunks []byte, bufSize uint16, limit int16, mode byte) {
		newReader := func() *bufio.Reader {
			return bufio.NewReaderSize(&chunkReader{data: input, chunks: chunks, broken: mode&1 != 0, early: mode&2 != 0}, int(bufSize%5000))
		}
		fast := &dataReader{r: newReader()}
		slow := &byteDataReader{r: newReader()}
		if limit > 0 {
			fast.limited, fast.n = true, int64(limit)
			slow.limited, slow.n = true, int64(limit)
		}
		var fastOut, slowOut []byte
		for k := 0; ; k++ {
			size := readSize(sizes, k)
			fb, sb := make([]byte, size), make([]byte, size)
			fn, ferr := fast.Read(fb)
			sn, serr := slow.Read(sb)
			if fn != sn || ferr != serr || !bytes.Equal(fb[:fn], sb[:sn]) {
				t.Fatalf("read %d of %d bytes: got %d bytes %q, %v; byte by byte %d bytes %q, %v", k, size, fn, fb[:fn], ferr, sn, sb[:sn], serr)
			}
			if fast.state != slow.state || fast.n != slow.n {
				t.Fatalf("read %d: state %d, %d bytes left; byte by byte %d, %d", k, fast.state, fast.n, slow.state, slow.n)
			}
			fastOut, slowOut = append(fastOut, fb[:fn]...), append(slowOut, sb[:sn]...)
			if ferr == ErrDataTooLarge {
				// As Conn.handleData does: drain the rest without the limit.
				fast.limited, slow.limited = false, false
				continue
			}
			if ferr != nil {
				break
			}
		}
		if !bytes.Equal(fastOut, slowOut) {
			t.Fatalf("message %q, byte by byte %q", fastOut, slowOut)
		}
		// The same bytes are left for the next command, and UnreadByte
		// does the same.
		fu, su := fast.r.UnreadByte(), slow.r.UnreadByte()
		if (fu == nil) != (su == nil) {
			t.Fatalf("UnreadByte after the message: %v, byte by byte %v", fu, su)
		}
		frest, ferr := io.ReadAll(fast.r)
		srest, serr := io.ReadAll(slow.r)
		if !bytes.Equal(frest, srest) || ferr != serr {
			t.Fatalf("left after the message: %q, %v; byte by byte %q, %v", frest, ferr, srest, serr)
		}
	})
}

func FuzzLineLimitReader(f *testing.F) {
	for _, s := range []string{
		"short\r\nlines\r\n",
		strings.Repeat("x", 40) + "\r\n" + strings.Repeat("y", 10) + "\n\n\n",
		"\n",
		string(testMessage(2000)),
	} {
		f.Add([]byte(s), []byte{0, 3, 250}, []byte{7, 0, 200}, []byte{20}, byte(0))
		f.Add([]byte(s), []byte{1}, []byte{}, []byte{128 + 40, 0, 128 + 12}, byte(3))
	}
	// limits, one per Read in turn, are 0 (off, as during BDAT) to 127,
	// or negative from 128 on.
	f.Fuzz(func(t *testing.T, input, sizes, chunks, limits []byte, mode byte) {
		limitAt := func(k int) int {
			if len(limits) == 0 {
				return 2000
			}
			return int(int8(limits[k%len(limits)]))
		}
		fast := &lineLimitReader{R: &chunkReader{data: input, chunks: chunks, broken: mode&1 != 0, early: mode&2 != 0}}
		slow := &byteLineLimitReader{R: &chunkReader{data: input, chunks: chunks, broken: mode&1 != 0, early: mode&2 != 0}}
		for k := 0; k < len(input)+10; k++ {
			size := readSize(sizes, k)
			fast.LineLimit, slow.LineLimit = limitAt(k), limitAt(k)
			fb, sb := make([]byte, size), make([]byte, size)
			fn, ferr := fast.Read(fb)
			sn, serr := slow.Read(sb)
			if fn != sn || ferr != serr || !bytes.Equal(fb, sb) {
				t.Fatalf("read %d of %d bytes, limit %d: got %d bytes %q, %v; byte by byte %d bytes %q, %v",
					k, size, fast.LineLimit, fn, fb[:fn], ferr, sn, sb[:sn], serr)
			}
			if fast.curLineLength != slow.curLineLength {
				t.Fatalf("read %d, limit %d: line length %d, byte by byte %d", k, fast.LineLimit, fast.curLineLength, slow.curLineLength)
			}
			if ferr != nil && ferr != ErrTooLongLine && ferr != errBroken {
				break
			}
		}
	})
}

// testMessage is a message shaped like bench/inbound's in Mailroom, about
// attach*1.37 bytes: text lines, then base64 in 76-column lines, then a
// line with a leading dot, dot-stuffed and ended as DATA carries it.
func testMessage(attach int) []byte {
	var b bytes.Buffer
	b.WriteString("From: a@example.com\r\nTo: b@example.com\r\nSubject: report\r\n\r\n")
	words := strings.Fields("invoice meeting schedule project budget report review contract delivery")
	for i := 0; b.Len() < attach/5; i++ {
		b.WriteString(words[i%len(words)])
		if i%12 == 11 {
			b.WriteString("\r\n")
		} else {
			b.WriteByte(' ')
		}
	}
	raw := make([]byte, attach)
	rand.New(rand.NewSource(1)).Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw)
	for len(enc) > 76 {
		b.WriteString("\r\n" + enc[:76])
		enc = enc[76:]
	}
	b.WriteString("\r\n" + enc + "\r\n..a line that starts with a dot\r\n.\r\n")
	return b.Bytes()
}

// BenchmarkDataReader reads a 161 KB message through the Conn's readers
// (lineLimitReader, a 4 KB bufio.Reader as net/textproto's, dataReader),
// byte by byte as in v0.25.1 and by runs.
func BenchmarkDataReader(b *testing.B) {
	msg := testMessage(100 * 1024)
	buf := make([]byte, 32*1024)
	b.Run("bytewise", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for i := 0; i < b.N; i++ {
			r := &byteDataReader{r: bufio.NewReader(&byteLineLimitReader{R: bytes.NewReader(msg), LineLimit: 2000})}
			readAll(b, r, buf)
		}
	})
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for i := 0; i < b.N; i++ {
			r := &dataReader{r: bufio.NewReader(&lineLimitReader{R: bytes.NewReader(msg), LineLimit: 2000})}
			readAll(b, r, buf)
		}
	})
}

func readAll(b *testing.B, r io.Reader, buf []byte) {
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
