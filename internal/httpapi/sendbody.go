package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
)

// readSendBody reads the body of a route whose requests carry attachments
// (a send, a batch, a receive-side send) up to max bytes. A larger body is
// refused with the catalogue's code for its cause, found by reading on
// without keeping it: attachments_too_large when one message's attachments
// pass their limit, else message_too_large (a single send: what it holds
// is its message) or, for a batch, request_too_large (no catalogue code
// names a batch too large in bytes).
func readSendBody(w http.ResponseWriter, r *http.Request, max int64, batch bool) ([]byte, error) {
	body, read, err := readUpTo(r, max)
	if !errors.Is(err, errTooLarge) {
		return body, err
	}
	// The attachments may lie anywhere in the body: what was read of it, then
	// the rest, up to twice the cap.
	if attachmentsOver(io.MultiReader(bytes.NewReader(read), r.Body), sending.MaxAttachmentsBase64, 2*max) {
		return nil, apierr.TooLarge("attachments_too_large",
			"The attachments of one message are over %d bytes (40 MB) after base64, in a request body over %d bytes.", sending.MaxAttachmentsBase64, max).
			WithNext("Send large files as links instead of attachments.")
	}
	if batch {
		return nil, errTooLarge
	}
	return nil, apierr.TooLarge("message_too_large", "The request body is over %d bytes, so the message it makes would be over 40 MB.", max).
		WithNext("Send large files as links instead of attachments.")
}

// attachmentsOver reads a JSON body, at most ceiling bytes of it, keeping
// nothing but counts, and says whether the content_base64 strings of one
// "attachments" array total more than limit characters (whitespace escapes
// not counted). Once they do it reads on without looking, so that a client
// still sending hears the answer rather than a reset. It is a scanner, not
// a parser: a body that is not JSON simply finds no attachments.
func attachmentsOver(body io.Reader, limit, ceiling int64) bool {
	br := bufio.NewReaderSize(io.LimitReader(body, ceiling), 32<<10)
	var (
		inString, escaped bool
		str               []byte // the current string's first bytes: enough for a key
		last              []byte // the last complete string, a key if ':' follows
		key               string // the key whose value comes next, while expecting one
		expecting         bool
		counting          bool // the current string is a content_base64 in an attachments array
		depth, attDepth   int
		cur               int64
	)
	str, last = make([]byte, 0, 16), make([]byte, 0, 16)
	for {
		b, err := br.ReadByte()
		if err != nil {
			return cur > limit
		}
		if inString {
			switch {
			case escaped:
				escaped = false
				if b == 'n' || b == 'r' || b == 't' {
					continue // whitespace, which base64 lengths leave out
				}
			case b == '\\':
				escaped = true
				continue
			case b == '"':
				inString = false
				last = append(last[:0], str...)
				continue
			}
			if counting {
				if cur++; cur > limit {
					_, _ = io.Copy(io.Discard, br)
					return true
				}
			} else if len(str) < cap(str) {
				str = append(str, b)
			}
			continue
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			inString, str = true, str[:0]
			counting = expecting && key == "content_base64" && attDepth > 0
		case ':':
			key, expecting = string(last), true
			continue
		case '[':
			depth++
			if expecting && key == "attachments" && attDepth == 0 {
				attDepth, cur = depth, 0
			}
		case ']':
			if depth == attDepth {
				attDepth = 0
			}
			depth--
		case '{':
			depth++
		case '}':
			depth--
		}
		expecting = false
	}
}
