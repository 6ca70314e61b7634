package events

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"mailroom/internal/store"
)

// Stored is a webhook event as the log holds it, read in log order by the
// event stream (GET /v1/events/stream) and a bulk replay.
type Stored struct {
	Seq       int64 // the log's order, the stream's cursor
	ID        string
	Type      string
	Sequence  int
	At        time.Time
	MailboxID string // "" when the event concerns no one mailbox
	EmailID   string // "" when no email is behind it
	Data      []byte // as Raise wrote it
}

// Envelope is the body a webhook delivery of the event carries.
func (s Stored) Envelope() ([]byte, error) {
	return MarshalEnvelope(s.ID, s.Type, s.Sequence, s.At, s.Data)
}

// MaxSeq is the newest event's place in the log (0 when it is empty): the
// primary key's last entry, one index step.
func MaxSeq(ctx context.Context, db *store.DB) (int64, error) {
	var seq int64
	err := db.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&seq)
	return seq, err
}

// WebhookEventsIn reads up to limit of the workspace's webhook events with
// seq in (after, upto], oldest first. The range walks the primary key: the
// workspace test is written workspace_id || ” so that SQLite does not pick
// events_email instead and read every event the workspace ever had (a
// reader keeps the range short; no index on (workspace_id, seq) slows every
// raise).
func WebhookEventsIn(ctx context.Context, db *store.DB, workspaceID string, after, upto int64, limit int) ([]Stored, error) {
	rows, err := db.Query(ctx, `SELECT seq, id, type, sequence, created_at, data, COALESCE(mailbox_id, ''), COALESCE(email_id, '')
		FROM events WHERE seq > ? AND seq <= ? AND workspace_id || '' = ? AND webhook = 1 ORDER BY seq LIMIT ?`,
		after, upto, workspaceID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanStored(rows)
}

func scanStored(rows *sql.Rows) ([]Stored, error) {
	var out []Stored
	for rows.Next() {
		var s Stored
		var at int64
		var data string
		if err := rows.Scan(&s.Seq, &s.ID, &s.Type, &s.Sequence, &at, &data, &s.MailboxID, &s.EmailID); err != nil {
			return nil, err
		}
		s.At, s.Data = store.FromMillis(at), []byte(data)
		out = append(out, s)
	}
	return out, rows.Err()
}

// SeqBefore returns a cursor just before the first event created at or
// after t (the log's order is its creation order, give or take a commit's
// length), found by bisecting the primary key: about 2·log2(events)
// one-row reads instead of a scan of the unindexed created_at.
func SeqBefore(ctx context.Context, db *store.DB, t time.Time) (int64, error) {
	lo, hi := int64(0), int64(0) // the answer is in [lo, hi]
	if err := db.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&hi); err != nil {
		return 0, err
	}
	want := store.Millis(t)
	for lo < hi {
		mid := lo + (hi-lo)/2
		var seq, at int64
		err := db.QueryRow(ctx, `SELECT seq, created_at FROM events WHERE seq > ? ORDER BY seq LIMIT 1`, mid).Scan(&seq, &at)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		if errors.Is(err, store.ErrNotFound) || at >= want {
			hi = mid // the first event after mid is already late enough
		} else {
			lo = seq // everything up to seq is too early
		}
	}
	return lo, nil
}

// WebhookEventsOfEmail reads up to limit of the webhook events of one
// email, oldest first, through events_email.
func WebhookEventsOfEmail(ctx context.Context, db *store.DB, workspaceID, emailID string, limit int) ([]Stored, error) {
	rows, err := db.Query(ctx, `SELECT seq, id, type, sequence, created_at, data, COALESCE(mailbox_id, ''), COALESCE(email_id, '')
		FROM events WHERE workspace_id = ? AND email_id = ? AND webhook = 1 ORDER BY seq LIMIT ?`, workspaceID, emailID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanStored(rows)
}
