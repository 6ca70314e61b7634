package sending

import (
	"context"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
)

// Email is an email as the API reads it back.
type Email struct {
	ID          string
	Status      string
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
	Events      []events.Event // only on Get
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
	return Email{
		ID: e.ID, Status: e.Status, From: e.From, To: nz(e.To), Cc: nz(e.Cc), Bcc: nz(e.Bcc), ReplyTo: nz(e.ReplyTo),
		Subject: e.Subject, CreatedAt: e.CreatedAt, ScheduledAt: e.ScheduledAt, Tags: tags,
		Opens: e.Opens, Clicks: e.Clicks, LastEvent: e.LastEvent, LastError: e.LastError, TestMode: e.TestMode, MessageID: e.MessageID,
	}
}

func errEmailNotFound() error { return apierr.NotFound("email") }

// Get reads one email with its timeline. Another workspace's id, or another
// key's email for a send-only key, answers not_found.
func (s *Service) Get(ctx context.Context, c Caller, id string) (*Email, error) {
	row, err := s.getRow(ctx, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errEmailNotFound()
	}
	if err != nil {
		return nil, err
	}
	e := row.public()
	e.Events, err = events.Timeline(ctx, s.db, c.WorkspaceID, id)
	if err != nil {
		return nil, err
	}
	return &e, nil
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
	q := `SELECT ` + summaryColumns + ` FROM emails e WHERE e.workspace_id = ?`
	args := []any{c.WorkspaceID}
	own, oargs := ownFilter(c)
	q += own
	args = append(args, oargs...)
	if pos != nil {
		q += ` AND (e.created_at < ? OR (e.created_at = ? AND e.id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
	}
	q += ` ORDER BY e.created_at DESC, e.id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Email{}
	for rows.Next() {
		r, err := scanSummary(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r.public())
	}
	return out, rows.Err()
}
