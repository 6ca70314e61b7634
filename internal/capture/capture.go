// Package capture is the development transport (MAILROOM_OUTBOUND=capture,
// `mailroom dev`): every message the delivery engine would hand to a server
// is kept, exactly as it would have gone out (built, personalised, DKIM
// signed), in the captured_emails table, and accepted with a 250 as a
// server would answer, so the email's events and webhooks are a real
// delivery's. Nothing leaves the node. The API and the dashboard list and
// show what was captured (html, text, headers, raw).
package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/ids"
	"mailroom/internal/inbound"
	"mailroom/internal/outbound"
	"mailroom/internal/store"
)

// Host names the "server" captured mail was handed to, in attempts.
const Host = "capture"

// Service is the transport and the reads.
type Service struct {
	db    *store.DB
	clock clock.Clock
}

// New returns the service over db.
func New(db *store.DB, c clock.Clock) *Service {
	if c == nil {
		c = clock.Real{}
	}
	return &Service{db: db, clock: c}
}

var _ outbound.Transport = (*Service)(nil)

// Send keeps the message and answers every recipient 250.
func (s *Service) Send(ctx context.Context, env outbound.Envelope, data []byte) (*outbound.Result, error) {
	started := s.clock.Now()
	m := Message{ID: ids.New("cap"), WorkspaceID: env.WorkspaceID, EmailID: env.EmailID, From: env.From,
		To: env.To, Subject: subjectOf(data), Size: len(data), CreatedAt: started.UTC()}
	if err := insert(ctx, s.db, &m, data); err != nil {
		// As a server that could not take the message now: tried again.
		return nil, &outbound.SendError{Temporary: true, Host: Host, Err: err}
	}
	ms := s.clock.Now().Sub(started).Milliseconds()
	reply := "2.0.0 captured as " + m.ID + "; not sent (MAILROOM_OUTBOUND=capture)"
	res := &outbound.Result{Host: Host}
	for _, rcpt := range env.To {
		res.Rcpts = append(res.Rcpts, outbound.RcptResult{Rcpt: rcpt, Code: 250, Enhanced: "2.0.0", Message: reply, OK: true,
			Host: Host, Stage: outbound.StageData,
			Steps: []outbound.Step{{Command: "DATA", Code: 250, Enhanced: "2.0.0", Text: reply, Millis: ms}}})
	}
	return res, nil
}

// Close does nothing: no connection is held.
func (s *Service) Close() error { return nil }

// Message is one captured message.
type Message struct {
	ID          string
	WorkspaceID string
	EmailID     string
	From        string // the return path (MAIL FROM)
	To          []string
	Subject     string
	Size        int
	CreatedAt   time.Time
}

// Shown is a captured message with its views: the parsed parts and the
// bytes as they would have gone out.
type Shown struct {
	Message
	HTML, Text *string
	Headers    map[string]string
	Raw        []byte
}

// List is a workspace's captured mail, newest first, at most limit after
// the cursor (the id of the last row of the previous page, "" first).
func (s *Service) List(ctx context.Context, workspaceID string, limit int, after string) ([]Message, error) {
	return list(ctx, s.db, workspaceID, limit, after)
}

var errNotFound = apierr.NotFound("captured email")

// Get reads one captured message with its views.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (*Shown, error) {
	m, raw, err := get(ctx, s.db, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	out := &Shown{Message: *m, Raw: raw}
	p, err := inbound.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("captured %s: %w", id, err)
	}
	out.HTML, out.Text, out.Headers = p.HTML, p.Text, p.Headers
	return out, nil
}

// subjectOf reads the Subject header's raw value for the list.
func subjectOf(data []byte) string {
	head, _, _ := strings.Cut(string(data[:min(len(data), 64<<10)]), "\r\n\r\n")
	for _, line := range strings.Split(head, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Subject") {
			if p, err := inbound.Parse([]byte("Subject:" + v + "\r\n\r\n")); err == nil {
				return p.Subject
			}
			return strings.TrimSpace(v)
		}
	}
	return ""
}
