package sending

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/outbound"
	"mailroom/internal/store"
)

// StoredAttachment is one attachment as kept in emails.attachments (a JSON
// array): Content travels as standard base64 in JSON.
type StoredAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Content     []byte `json:"content"`
}

// emailRow is one row of the emails table. Address lists hold formatted
// address strings ("Name <a@b.c>"); Recipients holds the bare, lowercased
// addresses of to, cc and bcc, for the delivery engine's envelope.
type emailRow struct {
	ID          string
	WorkspaceID string
	APIKeyID    string
	Status      EmailStatus
	From        string
	To          []string
	Cc          []string
	Bcc         []string
	ReplyTo     []string
	Subject     string
	HTML        string
	Text        string
	Headers     map[string]string
	Attachments []StoredAttachment
	Tags        map[string]string
	TestMode    bool
	MessageID   string
	ScheduledAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Opens       int
	Clicks      int
	LastError   string
	Recipients  addressList
	LastEvent   string
	// TemplateID and TemplateVersion name the template version a send
	// rendered ("" and 0 for a send without one), for analytics.
	TemplateID      string
	TemplateVersion int
}

func jsonText(v any, empty string) string {
	// Most sends leave most lists and maps empty: no encoding for those.
	switch x := v.(type) {
	case []string:
		if len(x) == 0 {
			return empty
		}
	case addressList:
		if len(x) == 0 {
			return empty
		}
	case map[string]string:
		if len(x) == 0 {
			return empty
		}
	case []StoredAttachment:
		if len(x) == 0 {
			return empty
		}
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return empty
	}
	return string(b)
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// emailColumns are the columns insertArgs fills, in order.
var emailColumns = []string{"id", "workspace_id", "api_key_id", "status", "from_addr", "to_addrs", "cc_addrs", "bcc_addrs", "reply_to",
	"subject", "html", "text_body", "headers", "attachments", "tags", "test_mode", "message_id", "scheduled_at", "created_at", "updated_at", "recipients", "last_error",
	"template_id", "template_version"}

// insertArgs encodes the row for emailColumns. It runs before the row
// reaches the group committer, so the one writer spends no time on JSON.
func (e *emailRow) insertArgs() []any {
	var sched any
	if e.ScheduledAt != nil {
		sched = store.Millis(*e.ScheduledAt)
	}
	return []any{e.ID, e.WorkspaceID, e.APIKeyID, string(e.Status), e.From, jsonText(e.To, "[]"), jsonText(e.Cc, "[]"), jsonText(e.Bcc, "[]"), jsonText(e.ReplyTo, "[]"),
		e.Subject, nullText(e.HTML), nullText(e.Text), jsonText(e.Headers, "{}"), jsonText(e.Attachments, "[]"), jsonText(e.Tags, "{}"),
		boolInt(e.TestMode), e.MessageID, sched, store.Millis(e.CreatedAt), store.Millis(e.CreatedAt), jsonText(e.Recipients, "[]"), e.LastError,
		e.TemplateID, e.TemplateVersion}
}

// eventData is the data every email.* event carries (see the contract):
// email_id, from, to, subject, tags, and test_mode for test sends.
func (e *emailRow) eventData() map[string]any {
	return events.EmailData(e.ID, e.From, e.To, e.Subject, e.Tags, e.TestMode)
}

// eventDataJSON is eventData encoded.
func (e *emailRow) eventDataJSON() ([]byte, error) {
	return events.EmailDataJSON(e.ID, e.From, e.To, e.Subject, e.Tags, e.TestMode)
}

// summaryColumns are read for lists and single reads (bodies and
// attachments are not).
const summaryColumns = `e.id, e.workspace_id, e.api_key_id, e.status, e.from_addr, e.to_addrs, e.cc_addrs, e.bcc_addrs, e.reply_to,
	e.subject, e.tags, e.test_mode, e.message_id, e.scheduled_at, e.created_at, e.updated_at, e.opens, e.clicks, e.last_error, e.recipients, ` +
	events.LastTypeColumn

type scanner interface{ Scan(dest ...any) error }

func scanSummary(sc scanner) (*emailRow, error) {
	e := &emailRow{}
	var to, cc, bcc, replyTo, tags, recipients string
	var testMode int
	var sched sql.NullInt64
	var created, updated int64
	err := sc.Scan(&e.ID, &e.WorkspaceID, &e.APIKeyID, &e.Status, &e.From, &to, &cc, &bcc, &replyTo,
		&e.Subject, &tags, &testMode, &e.MessageID, &sched, &created, &updated, &e.Opens, &e.Clicks, &e.LastError, &recipients, &e.LastEvent)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		src string
		dst any
	}{{to, &e.To}, {cc, &e.Cc}, {bcc, &e.Bcc}, {replyTo, &e.ReplyTo}, {tags, &e.Tags}, {recipients, &e.Recipients}} {
		if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
			return nil, fmt.Errorf("email %s: stored JSON: %w", e.ID, err)
		}
	}
	e.TestMode = testMode == 1
	e.ScheduledAt = store.NullMillis(sched)
	e.CreatedAt = store.FromMillis(created)
	e.UpdatedAt = store.FromMillis(updated)
	return e, nil
}

// ownFilter narrows a query to the caller's own emails when its key may
// only read what it sent.
func ownFilter(c Caller) (string, []any) {
	if c.OwnOnly {
		return " AND e.api_key_id = ?", []any{c.KeyID}
	}
	return "", nil
}

func (s *Service) getRow(ctx context.Context, c Caller, id string) (*emailRow, error) {
	own, args := ownFilter(c)
	row := s.db.QueryRow(ctx, `SELECT `+summaryColumns+` FROM emails e WHERE e.workspace_id = ? AND e.id = ?`+own,
		append([]any{c.WorkspaceID, id}, args...)...)
	e, err := scanSummary(row)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	return e, err
}

// loadFull reads a whole row including bodies, for the simulator and for
// message assembly.
func loadFull(ctx context.Context, q keyQuerier, workspaceID, id string) (*emailRow, error) {
	row := q.QueryRow(ctx, `SELECT `+summaryColumns+`, e.html, e.text_body, e.headers, e.attachments FROM emails e WHERE e.workspace_id = ? AND e.id = ?`, workspaceID, id)
	var html, text sql.NullString
	var headers, atts string
	e := &emailRow{}
	var to, cc, bcc, replyTo, tags, recipients string
	var testMode int
	var sched sql.NullInt64
	var created, updated int64
	err := row.Scan(&e.ID, &e.WorkspaceID, &e.APIKeyID, &e.Status, &e.From, &to, &cc, &bcc, &replyTo,
		&e.Subject, &tags, &testMode, &e.MessageID, &sched, &created, &updated, &e.Opens, &e.Clicks, &e.LastError, &recipients, &e.LastEvent,
		&html, &text, &headers, &atts)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		src string
		dst any
	}{{to, &e.To}, {cc, &e.Cc}, {bcc, &e.Bcc}, {replyTo, &e.ReplyTo}, {tags, &e.Tags}, {recipients, &e.Recipients}, {headers, &e.Headers}, {atts, &e.Attachments}} {
		if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
			return nil, fmt.Errorf("email %s: stored JSON: %w", e.ID, err)
		}
	}
	e.HTML, e.Text = html.String, text.String
	e.TestMode = testMode == 1
	e.ScheduledAt = store.NullMillis(sched)
	e.CreatedAt = store.FromMillis(created)
	e.UpdatedAt = store.FromMillis(updated)
	return e, nil
}

// outboundMessage is the one assembly of a send into an outbound.Message,
// used for the size check at booking and by Message for the delivery engine.
func outboundMessage(from Address, to, cc, bcc, replyTo []Address, subject, html, text string, headers map[string]string, atts []Attachment, messageID string, date time.Time) *outbound.Message {
	conv := func(as []Address) []outbound.Address {
		out := make([]outbound.Address, len(as))
		for i, a := range as {
			out[i] = outbound.Address{Name: a.Name, Address: a.Email}
		}
		return out
	}
	m := &outbound.Message{
		From: outbound.Address{Name: from.Name, Address: from.Email},
		To:   conv(to), Cc: conv(cc), Bcc: conv(bcc), ReplyTo: conv(replyTo),
		Subject: subject, HTML: html, Text: text, Headers: headers,
		MessageID: messageID, Date: date,
	}
	for _, a := range atts {
		m.Attachments = append(m.Attachments, outbound.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: a.Content})
	}
	return m
}

// addressList is the envelope stored in emails.recipients. The sending area
// books it as bare addresses; once the delivery engine has tried, each entry
// becomes an outcome object {email, status, ...}. Both read back as addresses.
type addressList []string

func (l *addressList) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(addressList, 0, len(raw))
	for _, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Email string `json:"email"`
		}
		if err := json.Unmarshal(r, &o); err != nil {
			return err
		}
		out = append(out, o.Email)
	}
	*l = out
	return nil
}

// The delivery engine moves an email along its lifecycle through the
// functions below: sending is the only writer of the emails table.

// MarkSending moves an email that is queued (or sending, on a retry) to
// sending with the Message-ID it goes out with. It reports false when the
// email has left those statuses (cancelled, or finished by another run).
func MarkSending(ctx context.Context, tx *store.Tx, id, messageID string, now time.Time) (bool, error) {
	res, err := tx.Exec(ctx, `UPDATE emails SET status = 'sending', message_id = ?, updated_at = ?
		WHERE id = ? AND status IN ('queued', 'sending')`, messageID, store.Millis(now), id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// FailUnsent ends an email still queued or sending as failed, with reason
// in last_error.
func FailUnsent(ctx context.Context, tx *store.Tx, id, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE emails SET status = ?, last_error = ?, updated_at = ?
		WHERE id = ? AND status IN ('queued', 'sending')`, string(StatusFailed), reason, store.Millis(now), id)
	return err
}

// LockOutcome reads an email's status and recipients (the JSON array of
// per-recipient outcomes) inside tx, locking the row on PostgreSQL, so
// concurrent outcome writers merge instead of overwriting each other.
func LockOutcome(ctx context.Context, tx *store.Tx, id string) (EmailStatus, string, error) {
	q := `SELECT status, recipients FROM emails WHERE id = ?` + tx.ForUpdate()
	var status EmailStatus
	var recipients string
	err := tx.QueryRow(ctx, q, id).Scan(&status, &recipients)
	return status, recipients, err
}

// WriteOutcome stores an email's status and recipients (JSON), and
// lastError unless it is empty.
func WriteOutcome(ctx context.Context, tx *store.Tx, id string, status EmailStatus, recipients, lastError string, now time.Time) error {
	var err error
	if lastError != "" {
		_, err = tx.Exec(ctx, `UPDATE emails SET status = ?, recipients = ?, last_error = ?, updated_at = ? WHERE id = ?`,
			string(status), recipients, lastError, store.Millis(now), id)
	} else {
		_, err = tx.Exec(ctx, `UPDATE emails SET status = ?, recipients = ?, updated_at = ? WHERE id = ?`,
			string(status), recipients, store.Millis(now), id)
	}
	return err
}

// failScheduled fails a scheduled email that may not go (the policy refused
// it when due); false when it has moved meanwhile.
func failScheduled(ctx context.Context, tx *store.Tx, id, reason string, now time.Time) (bool, error) {
	res, err := tx.Exec(ctx, `UPDATE emails SET status = 'failed', last_error = ?, updated_at = ? WHERE id = ? AND status = 'scheduled'`,
		reason, store.Millis(now), id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
