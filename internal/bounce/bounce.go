// Package bounce reads the reports remote servers send back after they
// accepted a message: delivery status notifications (RFC 3464, with RFC
// 3463 status codes and RFC 6533 for the UTF-8 variant) and abuse feedback
// reports (ARF, RFC 5965). Both arrive as multipart/report messages (RFC
// 6522). The parsers never panic on garbage; they return an error.
package bounce

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/textproto"
	"strings"

	"github.com/emersion/go-message"

	"mailroom/internal/msglimit"
)

// Kind says what a raw message is.
type Kind int

// Kinds returned by Detect.
const (
	KindOther Kind = iota // neither a DSN nor an ARF report
	KindDSN
	KindARF
)

func (k Kind) String() string {
	switch k {
	case KindDSN:
		return "dsn"
	case KindARF:
		return "arf"
	}
	return "other"
}

// ErrNotReport is returned when the message is not the kind of report asked
// for.
var ErrNotReport = errors.New("bounce: not a report of that kind")

// maxPart bounds how much of one report part is read: status fields are a
// few hundred bytes, and a huge part is an attack, not a report.
const maxPart = 1 << 20

// Detect classifies raw by its top-level Content-Type (multipart/report and
// its report-type parameter).
func Detect(raw []byte) Kind {
	h, err := readHeader(raw)
	if err != nil {
		return KindOther
	}
	typ, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || typ != "multipart/report" {
		return KindOther
	}
	switch strings.ToLower(params["report-type"]) {
	case "delivery-status", "global-delivery-status":
		return KindDSN
	case "feedback-report":
		return KindARF
	}
	return KindOther
}

func readHeader(raw []byte) (textproto.MIMEHeader, error) {
	r := textproto.NewReader(bufio.NewReader(io.LimitReader(bytes.NewReader(raw), maxPart)))
	h, err := r.ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return nil, err
	}
	return h, nil
}

// report is the common walk over a multipart/report: the human-readable
// text, the machine-readable part and the returned original message.
type report struct {
	text            string
	machine         []byte // body of the machine-readable part
	originalHeaders textproto.MIMEHeader
}

// readReport walks raw, which must be multipart/report with reportType;
// machineTypes are the content types of the machine-readable part.
func readReport(raw []byte, reportTypes []string, machineTypes []string) (*report, error) {
	// Before any parsing: a report nested 10,000 deep cost go-message's
	// Walk time and memory in the square of the depth (issue #38).
	if err := msglimit.Check(raw); err != nil {
		return nil, fmt.Errorf("bounce: %w", err)
	}
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		return nil, fmt.Errorf("bounce: %w", err)
	}
	typ, params, err := e.Header.ContentType()
	if err != nil || typ != "multipart/report" {
		return nil, ErrNotReport
	}
	rt := strings.ToLower(params["report-type"])
	found := false
	for _, want := range reportTypes {
		found = found || rt == want
	}
	if !found {
		return nil, ErrNotReport
	}
	rep := &report{}
	parts := 0
	// Walk descends nested multiparts: Gmail and Exchange put the
	// human-readable text inside multipart/alternative. It stops at
	// msglimit's depth and part count whatever Check let through.
	werr := e.Walk(func(path []int, p *message.Entity, err error) error {
		if len(path) > 0 {
			parts++ // the message itself is not counted, as in msglimit
		}
		if len(path) > msglimit.MaxDepth || parts > msglimit.MaxParts {
			return errWalkLimit
		}
		if len(path) == 0 || (err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err)) {
			return nil
		}
		ptyp, _, _ := p.Header.ContentType()
		if strings.HasPrefix(ptyp, "multipart/") {
			return nil
		}
		body, rerr := io.ReadAll(io.LimitReader(p.Body, maxPart))
		switch {
		case contains(machineTypes, ptyp):
			if rep.machine == nil {
				rep.machine = body
			}
		case ptyp == "message/rfc822" || ptyp == "message/global":
			if rep.originalHeaders == nil {
				rep.originalHeaders, _ = readHeader(body)
			}
		case ptyp == "text/rfc822-headers" || ptyp == "message/global-headers":
			if rep.originalHeaders == nil {
				rep.originalHeaders, _ = readHeader(append(body, "\r\n\r\n"...))
			}
		case (ptyp == "text/plain" || ptyp == "") && rep.text == "" && rerr == nil:
			rep.text = strings.TrimSpace(string(body))
		}
		return nil
	})
	if errors.Is(werr, errWalkLimit) {
		return nil, werr
	}
	if werr != nil && rep.machine == nil {
		// A truncated trailer after the status part still leaves a usable
		// report; without the status part there is nothing.
		return nil, fmt.Errorf("bounce: %w", werr)
	}
	if rep.machine == nil {
		return nil, fmt.Errorf("bounce: report has no %s part", machineTypes[0])
	}
	return rep, nil
}

var errWalkLimit = &parseError{"report nested too deep or with too many parts"}

// fieldBlocks parses a machine-readable body: groups of "Name: value"
// lines separated by blank lines (RFC 3464 section 2.1, RFC 5965 section
// 3.1 uses one group). Malformed lines end their group; what was read is
// kept.
func fieldBlocks(body []byte) []textproto.MIMEHeader {
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	var out []textproto.MIMEHeader
	for _, block := range strings.Split(text, "\n\n") {
		block = strings.TrimLeft(block, "\n")
		if strings.TrimSpace(block) == "" {
			continue
		}
		// textproto rejects a first line that starts with whitespace.
		block = strings.TrimLeft(block, " \t")
		r := textproto.NewReader(bufio.NewReader(strings.NewReader(block + "\n\n")))
		h, _ := r.ReadMIMEHeader()
		if len(h) > 0 {
			out = append(out, h)
		}
	}
	return out
}

// typedValue splits "rfc822; user@example.com" into its type and value;
// a value without a type comes back as is.
func typedValue(v string) (typ, value string) {
	if t, rest, ok := strings.Cut(v, ";"); ok && !strings.ContainsAny(t, " @<") {
		return strings.ToLower(strings.TrimSpace(t)), strings.TrimSpace(rest)
	}
	return "", strings.TrimSpace(v)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
