// Package tracking counts opens and clicks of the emails sent with
// track_opens / track_clicks. At delivery the message's html is rewritten
// (Rewrite): every http(s) link goes through the tracking host with a
// signed, stateless token that carries the one URL it may redirect to, and
// a 1×1 pixel is added. The click and pixel routes open the token (no
// database read), answer at once, and hand the count to a Recorder, which
// writes counts in batches: the email's counters (opens, clicks), the
// machine counters, and the analytics rollups, in one transaction.
package tracking

import (
	"encoding/binary"
	"errors"
	"time"

	"mailroom/internal/secretbox"
)

// Flags on a send (email_tracking.flags).
const (
	TrackOpens  = 1
	TrackClicks = 2
	// TestSend marks a scenario address's email (opened@, clicked@): its
	// opens and clicks reach the email's counters, never analytics.
	TestSend = 4
)

// Kinds of token.
const (
	KindOpen  = 'o'
	KindClick = 'c'
)

// Token purposes: an open token never opens as a click one.
const (
	purposeOpen  = "tracking open"
	purposeClick = "tracking click"
)

// Link is what a token carries: whose email, when the message was built
// (≈ handed over: the scanner rule's clock), and for a click the URL.
type Link struct {
	WorkspaceID string
	EmailID     string
	Issued      time.Time // second precision
	URL         string    // clicks only
}

const tokenVersion = 1

var errBadPayload = errors.New("tracking: malformed token payload")

// encode is version, issued (uvarint seconds), workspace and email id
// (uvarint length each), then the URL to the end.
func (l Link) encode() []byte {
	b := make([]byte, 0, 16+len(l.WorkspaceID)+len(l.EmailID)+len(l.URL))
	b = append(b, tokenVersion)
	b = binary.AppendUvarint(b, uint64(max(0, l.Issued.Unix())))
	b = binary.AppendUvarint(b, uint64(len(l.WorkspaceID)))
	b = append(b, l.WorkspaceID...)
	b = binary.AppendUvarint(b, uint64(len(l.EmailID)))
	b = append(b, l.EmailID...)
	return append(b, l.URL...)
}

func decodeLink(b []byte) (Link, error) {
	var l Link
	if len(b) < 1 || b[0] != tokenVersion {
		return l, errBadPayload
	}
	b = b[1:]
	sec, n := binary.Uvarint(b)
	if n <= 0 || sec > 1<<40 {
		return l, errBadPayload
	}
	b = b[n:]
	l.Issued = time.Unix(int64(sec), 0).UTC()
	str := func() (string, bool) {
		ln, n := binary.Uvarint(b)
		if n <= 0 || ln > uint64(len(b)-n) {
			return "", false
		}
		s := string(b[n : n+int(ln)])
		b = b[n+int(ln):]
		return s, true
	}
	var ok1, ok2 bool
	l.WorkspaceID, ok1 = str()
	l.EmailID, ok2 = str()
	if !ok1 || !ok2 || l.WorkspaceID == "" || l.EmailID == "" {
		return l, errBadPayload
	}
	l.URL = string(b)
	return l, nil
}

// Signer makes and opens tracking tokens (secretbox.Token).
type Signer struct{ Box *secretbox.Box }

// OpenToken signs an open pixel's token.
func (s Signer) OpenToken(l Link) string {
	l.URL = ""
	return s.Box.Token(purposeOpen, nil, l.encode())
}

// ClickToken signs a click token carrying l.URL.
func (s Signer) ClickToken(l Link) string { return s.Box.Token(purposeClick, nil, l.encode()) }

// Open reads a token of kind; ok is false for anything tampered, truncated,
// of the other kind or not made by this service.
func (s Signer) Open(kind byte, token string) (Link, bool) {
	purpose := purposeOpen
	if kind == KindClick {
		purpose = purposeClick
	}
	p, ok := s.Box.OpenToken(purpose, nil, token)
	if !ok {
		return Link{}, false
	}
	l, err := decodeLink(p)
	if err != nil {
		return Link{}, false
	}
	if kind == KindClick && !safeTarget(l.URL) {
		return Link{}, false
	}
	return l, true
}
