package sending

import (
	"context"
	"errors"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
)

// Email is an email as the API reads it back.
type Email struct {
	ID          string
	Status      EmailStatus
	From        string
	To          []string
	Cc          []string
	Bcc         []string
	ReplyTo     []string
	Subject     string
	CreatedAt   time.Time
	ScheduledAt *time.Time
	Tags        map[string]string
	Opens       int
	Clicks      int
	LastEvent   string // newest timeline entry, "" before any
	LastError   string
	TestMode    bool
	MessageID   string
	Events      []events.Event
}

func (e *emailRow) public() Email {
	nz := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	tags := e.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	last := e.LastEvent
	if last == "" {
		last = e.acceptedEntry().Type
	}
	return Email{
		ID: e.ID, Status: e.Status, From: e.From, To: nz(e.To), Cc: nz(e.Cc), Bcc: nz(e.Bcc), ReplyTo: nz(e.ReplyTo),
		Subject: e.Subject, CreatedAt: e.CreatedAt, ScheduledAt: e.ScheduledAt, Tags: tags,
		Opens: e.Opens, Clicks: e.Clicks, LastEvent: last, LastError: e.LastError, TestMode: e.TestMode, MessageID: e.MessageID,
	}
}

func errEmailNotFound() error { return apierr.NotFound("email") }

// Get reads one email with its timeline. Another workspace's id, or another
// key's email for a send-only key, answers not_found.
func (s *Service) Get(ctx context.Context, c Caller, id string) (*Email, error) {
	row, err := readRow(ctx, s.db, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errEmailNotFound()
	}
	if err != nil {
		return nil, err
	}
	return s.withTimeline(ctx, row)
}

// Read is Get with what the email says (GET /v1/emails/{id}): one read of
// the whole row, one of its timeline.
func (s *Service) Read(ctx context.Context, c Caller, id string) (*Email, *Content, error) {
	row, err := s.readFull(ctx, c, id)
	if err != nil {
		return nil, nil, err
	}
	e, err := s.withTimeline(ctx, row)
	if err != nil {
		return nil, nil, err
	}
	return e, &Content{HTML: row.HTML, Text: row.Text, Headers: row.Headers}, nil
}

func (s *Service) withTimeline(ctx context.Context, row *emailRow) (*Email, error) {
	e := row.public()
	rest, err := events.Timeline(ctx, s.db, row.WorkspaceID, row.ID)
	if err != nil {
		return nil, err
	}
	e.Events = append([]events.Event{row.acceptedEntry()}, rest...)
	return &e, nil
}

// acceptedEntry is the first timeline entry of every email, email.accepted
// (or email.scheduled for a booking), derived from the row rather than
// stored: it carries the row's own time and data, and an id derived from the
// email's so that it is the same on every read.
func (e *emailRow) acceptedEntry() events.Event {
	kind := events.EmailAccepted
	if e.ScheduledAt != nil {
		kind = events.EmailScheduled
	}
	seq, _ := events.Sequence(kind)
	return events.Event{
		ID: "whd_" + strings.TrimPrefix(e.ID, "em_"), WorkspaceID: e.WorkspaceID, EmailID: e.ID,
		Type: kind, Sequence: seq, CreatedAt: e.CreatedAt, Data: e.eventData(),
	}
}

// Position is where a list page continues: after the email created at At
// (unix ms) with id ID, in newest-first order.
type Position struct {
	At int64
	ID string
}

// List reads up to limit emails newest first, after pos when given. It reads
// exactly limit rows; callers wanting has_more ask for one more.
func (s *Service) List(ctx context.Context, c Caller, limit int, pos *Position) ([]Email, error) {
	list, err := listRows(ctx, s.db, c, limit, pos)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.ID
	}
	timelines, err := events.Timelines(ctx, s.db, c.WorkspaceID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Email, len(list))
	for i, r := range list {
		out[i] = r.public()
		out[i].Events = append([]events.Event{r.acceptedEntry()}, timelines[r.ID]...)
	}
	return out, nil
}

// Content is what an email says, as accepted: its bodies and the headers
// its sender added.
type Content struct {
	HTML, Text string
	Headers    map[string]string
}

// Content reads an email's bodies and headers (the dashboard shows them),
// with Get's visibility: another workspace's id, or another key's email for
// a send-only key, answers not_found.
func (s *Service) Content(ctx context.Context, c Caller, id string) (*Content, error) {
	row, err := s.readFull(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return &Content{HTML: row.HTML, Text: row.Text, Headers: row.Headers}, nil
}

// readFull reads an email whole (bodies and attachments) with Get's
// visibility: another workspace's id, or another key's email for a
// send-only key, answers not_found.
func (s *Service) readFull(ctx context.Context, c Caller, id string) (*emailRow, error) {
	row, err := loadFull(ctx, s.db, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errEmailNotFound()
	}
	if err != nil {
		return nil, err
	}
	return row, s.withBody(ctx, row)
}
