package sending

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/tracking"
	"mailroom/internal/webhooks"
	"mailroom/internal/workspaces"
)

// StoredAttachment is one attachment as kept in emails.attachments (a JSON
// array): Content travels as standard base64 in JSON.
type StoredAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Content     []byte `json:"content"`
	ContentID   string `json:"content_id,omitempty"`
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
	// TopicID is the topic the send named ("" for none): a scheduled send
	// is checked against its recipients' opt-outs again when due.
	TopicID string
	// BodySource names what renders this email's body (BodySource) when
	// the row stores none: a broadcast recipient.
	BodySource string
	// Shared, when set, holds the From, ReplyTo, Tags, mail class and the
	// head of the BodySource this email shares with others (email_shared):
	// the row stores none of the first four and the rest of its BodySource.
	Shared *shared
}

// shared is an email_shared row: what many emails (a broadcast's) have
// alike, stored once (issue #47).
type shared struct {
	ID           int64
	SourcePrefix string
}

// sharedJoin joins an email's shared row (none for most) to "FROM emails e"
// as s; the columns below read each shared field from it or the row.
const (
	sharedJoin    = ` LEFT JOIN email_shared s ON s.id = e.shared_id`
	fromSQL       = `COALESCE(s.from_addr, e.from_addr)`
	replyToSQL    = `COALESCE(s.reply_to, e.reply_to)`
	tagsSQL       = `COALESCE(s.tags, e.tags)`
	bodySourceSQL = `CASE WHEN e.body_source = '' THEN '' ELSE COALESCE(s.source_prefix, '') || e.body_source END`
	// A row with a shared one stores its empty lists and maps as '' (the
	// Cc and Bcc of a marketing email, the headers and attachments of a
	// rendered one): 8 bytes more of each broadcast recipient's row.
	ccSQL      = `COALESCE(NULLIF(e.cc_addrs, ''), '[]')`
	bccSQL     = `COALESCE(NULLIF(e.bcc_addrs, ''), '[]')`
	headersSQL = `COALESCE(NULLIF(e.headers, ''), '{}')`
)

// shareRow is the id of the workspace's email_shared row of these values,
// written if it is new (once for a broadcast: its digest is the key).
// track is its emails' tracking flags (they book late: TrackingBooking);
// a row written before 00125, with none in its digest, has 0.
func shareRow(ctx context.Context, tx *store.Tx, ws, from, replyTo, tags, prefix, class string, track int, now time.Time) (int64, error) {
	h := sha256.New()
	for _, f := range []string{ws, from, replyTo, tags, prefix, class} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	if track != 0 {
		h.Write([]byte(strconv.Itoa(track)))
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if _, err := tx.Exec(ctx, `INSERT INTO email_shared (workspace_id, digest, from_addr, reply_to, tags, source_prefix, mail_class, track_flags, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING`, ws, digest, from, replyTo, tags, prefix, class, track, store.Millis(now)); err != nil {
		return 0, err
	}
	var id int64
	return id, tx.QueryRow(ctx, `SELECT id FROM email_shared WHERE digest = ?`, digest).Scan(&id)
}

// emptyAsNone is an empty JSON list or map as a row with a shared one
// stores it: the empty string (ccSQL and its siblings read it back).
func emptyAsNone(v string) string {
	if v == "[]" || v == "{}" {
		return ""
	}
	return v
}

// sourcePrefix is the head the body sources share, up to and including an
// underscore, that leaves each a non-empty rest ("" when none does): a
// broadcast's sources are its id, "_" and a contact id.
func sourcePrefix(sources []string) string {
	p := ""
	for i, src := range sources {
		if i == 0 {
			p = src
			continue
		}
		n := 0
		for n < len(p) && n < len(src) && p[n] == src[n] {
			n++
		}
		p = p[:n]
	}
	p = p[:strings.LastIndexByte(p, '_')+1]
	for _, src := range sources {
		if len(src) == len(p) {
			return ""
		}
	}
	return p
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

// bodyApartOver is the size of an email's bodies and attachments (in bytes)
// over which they are stored in email_bodies rather than in its row: SQLite
// writes a whole row again at every UPDATE, and the status of an email
// changes two or three times on its way out (measured on a broadcast of 15 KB
// bodies: 120 KB written per recipient with the body inline). Smaller ones
// stay inline, which spares the common small send a second insert.
const bodyApartOver = 1024

// insertArgs encodes the row for the accept statement (insertEmails' columns,
// class its mail_class) and, when they are stored apart, the bodies for
// insertBodies (nil otherwise). It runs before the row reaches the group
// committer, so the one writer spends no time on JSON.
func (e *emailRow) insertArgs(class string) (row, body []any) {
	var sched any
	if e.ScheduledAt != nil {
		sched = store.Millis(*e.ScheduledAt)
	}
	html, text, atts := store.TextOrNull(e.HTML), store.TextOrNull(e.Text), jsonText(e.Attachments, "[]")
	if len(e.HTML)+len(e.Text)+len(atts) > bodyApartOver {
		body = []any{e.ID, html, text, atts}
		html, text, atts = nil, nil, "[]"
	}
	from, replyTo, tags, source, sharedID := "", "", "", e.BodySource, any(nil)
	cc, bcc, headers := jsonText(e.Cc, "[]"), jsonText(e.Bcc, "[]"), jsonText(e.Headers, "{}")
	if e.Shared != nil {
		sharedID, source, class = e.Shared.ID, strings.TrimPrefix(source, e.Shared.SourcePrefix), ""
		cc, bcc, headers, atts = emptyAsNone(cc), emptyAsNone(bcc), emptyAsNone(headers), emptyAsNone(atts)
	} else {
		from, replyTo, tags = e.From, jsonText(e.ReplyTo, "[]"), jsonText(e.Tags, "{}")
	}
	return []any{e.ID, e.WorkspaceID, e.APIKeyID, string(e.Status), from, jsonText(e.To, "[]"), cc, bcc, replyTo,
		e.Subject, html, text, headers, atts, tags,
		store.BoolInt(e.TestMode), storedMessageID(e.ID, e.From, e.MessageID), sched, store.Millis(e.CreatedAt), store.Millis(e.CreatedAt), jsonText(e.Recipients, "[]"), e.LastError,
		e.TemplateID, e.TemplateVersion, e.TopicID, source, sharedID, class}, body
}

// bodySQL reads an email's bodies and attachments (from email_bodies when
// they are stored apart) as three columns; bodyJoin is its join, after
// "FROM emails e".
const (
	bodySQL  = `CASE WHEN b.email_id IS NULL THEN e.html ELSE b.html END, CASE WHEN b.email_id IS NULL THEN e.text_body ELSE b.text_body END, COALESCE(b.attachments, NULLIF(e.attachments, ''), '[]')`
	bodyJoin = ` LEFT JOIN email_bodies b ON b.email_id = e.id`
)

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
const summaryColumns = `e.id, e.workspace_id, e.api_key_id, e.status, ` + fromSQL + `, e.to_addrs, ` + ccSQL + `, ` + bccSQL + `, ` + replyToSQL + `,
	e.subject, ` + tagsSQL + `, e.test_mode, e.message_id, e.scheduled_at, e.created_at, e.updated_at, e.opens, e.clicks, e.last_error, e.recipients, ` +
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
	if recipients, err = withDeliveredTo(recipients, to); err != nil {
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
	e.MessageID = readMessageID(e.ID, e.From, e.MessageID)
	e.ScheduledAt = store.NullMillis(sched)
	e.CreatedAt = store.FromMillis(created)
	e.UpdatedAt = store.FromMillis(updated)
	return e, nil
}

// ownFilter narrows a query to the caller's own emails when its key may
// only read what it sent.
func ownFilter(c Caller) (string, []any) {
	var q string
	var args []any
	if c.OwnOnly {
		q, args = " AND e.api_key_id = ?", []any{c.KeyID}
	}
	if c.FromAddress != "" {
		// from_addr is the From as written: the bare address or "Name <address>".
		q += ` AND (LOWER(` + fromSQL + `) = ? OR LOWER(` + fromSQL + `) LIKE ? ESCAPE '!')`
		args = append(args, c.FromAddress, "%<"+likeEscape(c.FromAddress)+">")
	}
	return q, args
}

// Sender is who an email is from: its workspace and From as written.
type Sender struct{ WorkspaceID, From string }

// Senders reads the From of the emails among ids (webhooks attribute an
// email's events to the mailbox that sent it, through inbound.SentFrom).
func Senders(ctx context.Context, q store.Querier, ids []string) (map[string]Sender, error) {
	out := make(map[string]Sender, len(ids))
	for chunk := range slices.Chunk(ids, 512) {
		args, in := store.PaddedIn(nil, chunk)
		rows, err := q.Query(ctx, `SELECT e.id, e.workspace_id, `+fromSQL+` FROM emails e`+sharedJoin+` WHERE e.id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var sd Sender
			if err := rows.Scan(&id, &sd.WorkspaceID, &sd.From); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = sd
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FromIs reports whether a From as stored (the bare address or "Name
// <address>") is address, as ownFilter's SQL does.
func FromIs(from, address string) bool {
	from, address = strings.ToLower(from), strings.ToLower(address)
	return from == address || strings.HasSuffix(from, "<"+address+">")
}

// likeEscape escapes LIKE's wildcards with '!'.
func likeEscape(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// readRow reads one of the caller's emails (no bodies), or
// store.ErrNotFound.
func readRow(ctx context.Context, q store.Querier, c Caller, id string) (*emailRow, error) {
	own, args := ownFilter(c)
	return scanSummary(q.QueryRow(ctx, `SELECT `+summaryColumns+` FROM emails e`+sharedJoin+` WHERE e.workspace_id = ? AND e.id = ?`+own,
		append([]any{c.WorkspaceID, id}, args...)...))
}

// loadFull reads a whole row including bodies, for the simulator and for
// message assembly (a Caller of the workspace alone) and for reads (the
// caller's visibility, as readRow).
func loadFull(ctx context.Context, q store.Querier, c Caller, id string) (*emailRow, error) {
	own, args := ownFilter(c)
	row := q.QueryRow(ctx, `SELECT `+summaryColumns+`, `+bodySQL+`, `+headersSQL+`, e.topic_id, `+bodySourceSQL+` FROM emails e`+sharedJoin+bodyJoin+` WHERE e.workspace_id = ? AND e.id = ?`+own,
		append([]any{c.WorkspaceID, id}, args...)...)
	var html, text sql.NullString
	var headers, atts string
	e := &emailRow{}
	var to, cc, bcc, replyTo, tags, recipients string
	var testMode int
	var sched sql.NullInt64
	var created, updated int64
	err := row.Scan(&e.ID, &e.WorkspaceID, &e.APIKeyID, &e.Status, &e.From, &to, &cc, &bcc, &replyTo,
		&e.Subject, &tags, &testMode, &e.MessageID, &sched, &created, &updated, &e.Opens, &e.Clicks, &e.LastError, &recipients, &e.LastEvent,
		&html, &text, &atts, &headers, &e.TopicID, &e.BodySource)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if recipients, err = withDeliveredTo(recipients, to); err != nil {
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
	e.MessageID = readMessageID(e.ID, e.From, e.MessageID)
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
		m.Attachments = append(m.Attachments, outbound.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: a.Content, ContentID: a.ContentID})
	}
	return m
}

// addressList is the envelope stored in emails.recipients. The sending area
// books it as bare addresses; once the delivery engine has tried, each entry
// becomes an outcome object {email, status, ...}, or, when every recipient
// was delivered, the array is "=" and the bare addresses (the delivery
// engine rebuilds their outcomes from its attempts). All read back as
// addresses.
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
			if s != "=" { // the delivery engine's mark of a delivered list
				out = append(out, s)
			}
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

// DeliveredTo is the stored recipients of an email the delivery engine
// delivered to each of its To addresses, as written, and to no other: its
// mark of a delivered list (["=", address...]) without the addresses,
// which are the email's own (issue #47). Every read gives them back
// (withDeliveredTo), so the delivery engine and the API see the list whole.
const DeliveredTo = `["="]`

// IsDeliveredTo reports whether addrs are to, in order: the delivered
// list that is stored as DeliveredTo (a broadcast recipient's).
func IsDeliveredTo(addrs, to []string) bool {
	return len(addrs) > 0 && slices.Equal(addrs, to)
}

// withDeliveredTo is the stored recipients raw, with the addresses that
// DeliveredTo leaves out put back from the email's To (to, as stored).
func withDeliveredTo(raw, to string) (string, error) {
	if raw != DeliveredTo {
		return raw, nil
	}
	var l []string
	if err := json.Unmarshal([]byte(to), &l); err != nil {
		return "", err
	}
	b, err := json.Marshal(append([]string{"="}, l...))
	return string(b), err
}

// The delivery engine moves an email along its lifecycle through the
// functions below: sending is the only writer of the emails table.

// MarkSending moves an email that is queued (or sending, on a retry) to
// sending under the attempt's fencing token claim (LockOutcome reads it
// back). It reports false when the email has left those statuses
// (cancelled, or finished by another run). The Message-ID it goes out with
// was fixed when it was accepted (storedMessageID).
func MarkSending(ctx context.Context, tx *store.Tx, id, claim string, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = 'sending', claim = ?, updated_at = ?
		WHERE id = ? AND status IN ('queued', 'sending')`, claim, store.Millis(now), id))
}

// FailUnsent ends an email still queued or sending as failed, with reason
// in last_error.
func FailUnsent(ctx context.Context, tx *store.Tx, id, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE emails SET status = ?, last_error = ?, updated_at = ?
		WHERE id = ? AND status IN ('queued', 'sending')`, string(StatusFailed), reason, store.Millis(now), id)
	return err
}

// LockOutcome reads an email's status, recipients (the JSON array of
// per-recipient outcomes) and the fencing token of the attempt holding it
// inside tx, locking the row on PostgreSQL, so
// concurrent outcome writers merge instead of overwriting each other.
func LockOutcome(ctx context.Context, tx *store.Tx, id string) (status EmailStatus, recipients, claim string, err error) {
	q := `SELECT status, recipients, to_addrs, claim FROM emails WHERE id = ?` + tx.ForUpdate()
	var to string
	if err = tx.QueryRow(ctx, q, id).Scan(&status, &recipients, &to, &claim); err != nil {
		return status, recipients, claim, err
	}
	recipients, err = withDeliveredTo(recipients, to)
	return status, recipients, claim, err
}

// WriteOutcome stores an email's status and recipients (JSON), and
// lastError unless it is empty. A final status drops the claim: no attempt
// holds the email any more (LockOutcome's reader checks the status first).
func WriteOutcome(ctx context.Context, tx *store.Tx, id string, status EmailStatus, recipients, lastError string, now time.Time) error {
	claim := "claim"
	if status != StatusSending {
		claim = "''"
	}
	var err error
	if lastError != "" {
		_, err = tx.Exec(ctx, `UPDATE emails SET status = ?, recipients = ?, last_error = ?, claim = `+claim+`, updated_at = ? WHERE id = ?`,
			string(status), recipients, lastError, store.Millis(now), id)
	} else {
		_, err = tx.Exec(ctx, `UPDATE emails SET status = ?, recipients = ?, claim = `+claim+`, updated_at = ? WHERE id = ?`,
			string(status), recipients, store.Millis(now), id)
	}
	return err
}

// WriteOutcomeIf is WriteOutcome for a writer that read the email before
// and merged its outcome into the recipients it read (was): the row is
// written only while it still holds was, the status queued or sending and,
// when claim is set, that claim. ok is false when it was not (nothing is
// written; the writer reads the row again with LockOutcome). One
// statement where reading first took two.
func WriteOutcomeIf(ctx context.Context, tx *store.Tx, id string, status EmailStatus, recipients, lastError string, now time.Time, was, claim string) (ok bool, err error) {
	set := "claim"
	if status != StatusSending {
		set = "''"
	}
	const where = ` WHERE id = ? AND status IN ('queued', 'sending') AND recipients = ? AND (? = '' OR claim = ?)`
	if lastError != "" {
		return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = ?, recipients = ?, last_error = ?, claim = `+set+`, updated_at = ?`+where,
			string(status), recipients, lastError, store.Millis(now), id, was, claim, claim))
	}
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = ?, recipients = ?, claim = `+set+`, updated_at = ?`+where,
		string(status), recipients, store.Millis(now), id, was, claim, claim))
}

// lookupKey reads a live (younger than 24 hours) key, or nil.
func lookupKey(ctx context.Context, q store.Querier, ws, key string, now time.Time) (*storedKey, error) {
	var k storedKey
	var status int
	var response string
	var created int64
	err := q.QueryRow(ctx, `SELECT fingerprint, status, response, created_at FROM idempotency_keys WHERE workspace_id = ? AND key = ?`, ws, key).
		Scan(&k.fingerprint, &status, &response, &created)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if store.FromMillis(created).Before(now.Add(-IdempotencyWindow)) {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(response), &k.outcome); err != nil {
		return nil, err
	}
	k.outcome.HTTPStatus = status
	return &k, nil
}

// reserveKey stores the key with its outcome inside the accepting
// transaction. The primary key makes a race between nodes yield exactly one
// email: the loser finds the winner's row (PostgreSQL makes it wait for the
// winner's commit) and answers the winner's outcome. An expired row is
// replaced.
func reserveKey(ctx context.Context, tx *store.Tx, ws, key, fp string, out Outcome, now time.Time) (*Outcome, error) {
	body, _ := json.Marshal(out)
	res, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (workspace_id, key, fingerprint, email_id, status, response, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, key) DO NOTHING`,
		ws, key, fp, out.ID, out.HTTPStatus, string(body), store.Millis(now))
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, nil
	}
	stored, err := lookupKey(ctx, tx, ws, key, now)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return stored.answer(fp)
	}
	// The row is older than the window: it no longer counts.
	_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET fingerprint = ?, email_id = ?, status = ?, response = ?, created_at = ?
		WHERE workspace_id = ? AND key = ?`, fp, out.ID, out.HTTPStatus, string(body), store.Millis(now), ws, key)
	return nil, err
}

// forgetKeys deletes the keys stored before cutoff.
func forgetKeys(ctx context.Context, db *store.DB, cutoff time.Time) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, store.Millis(cutoff))
	return err
}

// listQuery reads a page of the caller's emails. Both listings walk
// emails_workspace_created (workspace_id, created_at, id, with api_key_id
// carried along): a key that may read only its own emails filters the
// workspace's range on the key, without a second index (migration 00012).
func listQuery(c Caller, limit int, pos *Position) (string, []any) {
	q := `SELECT ` + summaryColumns + ` FROM emails e` + sharedJoin + ` WHERE e.workspace_id = ?`
	args := []any{c.WorkspaceID}
	own, oargs := ownFilter(c)
	q += own
	args = append(args, oargs...)
	if pos != nil {
		q += ` AND (e.created_at < ? OR (e.created_at = ? AND e.id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
	}
	q += ` ORDER BY e.created_at DESC, e.id DESC LIMIT ?`
	return q, append(args, limit)
}

// query is the read for emails (cs.emails or a chunk of them), as rows of
// (kind, workspace or key id, email, reason): 0 a suppression, 1 a
// workspace with a webhook endpoint, 2 a live key. The endpoints and keys
// are asked in the first chunk only. Each area writes its own part.
func (cs *checkSet) query(emails []string, first bool) (string, []any) {
	var args []any
	var parts []string
	var q string
	if len(emails) > 0 {
		q, args = suppressions.ListedQuery(0, args, emails)
		parts = append(parts, q)
	}
	if first && len(cs.workspaces) > 0 {
		q, args = webhooks.ListenersQuery(1, args, cs.workspaces)
		parts = append(parts, q)
	}
	if first && len(cs.keys) > 0 {
		q, args = workspaces.LiveKeysQuery(2, args, cs.keys)
		parts = append(parts, q)
	}
	return strings.Join(parts, ` UNION ALL `), args
}

// listRows reads a page of the caller's emails (see listQuery).
func listRows(ctx context.Context, q store.Querier, c Caller, limit int, pos *Position) ([]*emailRow, error) {
	query, args := listQuery(c, limit, pos)
	return store.QueryAll(ctx, q, func(sc store.Scanner) (*emailRow, error) { return scanSummary(sc) }, query, args...)
}

// The accept statement: the emails one commit accepts (a group commit's
// sends, a broadcast's hand-over, an automation's steps) go into emails in
// one statement, and the bodies stored apart into email_bodies in another,
// written out below per dialect; writeAccepted queues them for the commit
// (store.Tx.DeferWritten). On PostgreSQL the send path's commit carries
// acceptVeto beside them.

// insertEmails is the head of the accept statement: emails' columns in the
// order insertArgs fills them. A new column is its name here, its array in
// acceptEmailsPG and its value in insertArgs.
const insertEmails = `INSERT INTO emails (id, workspace_id, api_key_id, status,
	from_addr, to_addrs, cc_addrs, bcc_addrs, reply_to, subject,
	html, text_body, headers, attachments, tags,
	test_mode, message_id, scheduled_at, created_at, updated_at,
	recipients, last_error, template_id, template_version, topic_id,
	body_source, shared_id, mail_class)`

// acceptEmailsPG is the accept statement on PostgreSQL: one array per column
// (as River's JobInsertFastMany), so a batch of any size is one statement.
// The unnests stand in the select list, where PostgreSQL takes row i from
// every array's element i and streams the rows (in FROM it would first copy
// them all). It runs inside the commit's one statement, beside the commit's
// other rows and after acceptVeto when the batch is guarded.
const acceptEmailsPG = insertEmails + `
	SELECT unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]),
	unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]),
	unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]),
	unnest(?::int4[]), unnest(?::text[]), unnest(?::int8[]), unnest(?::int8[]), unnest(?::int8[]),
	unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::int4[]), unnest(?::text[]),
	unnest(?::text[]), unnest(?::int8[]), unnest(?::text[])`

// On SQLite the accept statement is insertEmails VALUES (?, ...), (?, ...),
// ... in statements of 64, 16, 4 and 1 rows (store.Tx.ExecValues): SQLite
// has no arrays, and a fixed set of sizes keeps its prepared statements few.

// insertBodies is the head of the bodies' statement (insertArgs' body).
const insertBodies = `INSERT INTO email_bodies (email_id, html, text_body, attachments)`

// acceptBodiesPG is insertBodies on PostgreSQL, as acceptEmailsPG.
const acceptBodiesPG = insertBodies + ` SELECT unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[])`

// emailWidth and bodyWidth are the values of one row of each statement.
var emailWidth, bodyWidth = strings.Count(insertEmails, ",") + 1, strings.Count(insertBodies, ",") + 1

// acceptVeto keeps the accept statement's rows out on PostgreSQL (with every
// other row of the commit: store.Guard) when the read it rides on, g(kind, a,
// b) from checkSet.query, found what the batch bet against (groupWriter.guard):
// a suppression of a recipient a send names (kind 0: a is the workspace, empty
// for a global one, b the address), a key taken on trust that is gone (kind
// 2: a is the live key's id), or a workspace with a webhook endpoint the
// events were not written for (kind 1). Its arguments: the (workspace,
// recipient) pairs the sends check, the keys taken on trust, the workspaces
// assumed to have endpoints.
const acceptVeto = `EXISTS (SELECT 1 FROM g JOIN unnest(?::text[], ?::text[]) AS p(ws, email)
		ON g.kind = 0 AND g.b = p.email AND (g.a = '' OR g.a = p.ws))
	OR EXISTS (SELECT 1 FROM unnest(?::text[]) AS k(id) WHERE NOT EXISTS (SELECT 1 FROM g WHERE g.kind = 2 AND g.a = k.id))
	OR EXISTS (SELECT 1 FROM g WHERE g.kind = 1 AND NOT (g.a = ANY(?::text[])))`

// writeAccepted queues the accept statement for a's emails and their bodies
// in tx, to run just before it commits, and a's deliveries in deliver_batch
// jobs of at most jobs.MaxDeliverBatch emails.
func writeAccepted(tx *store.Tx, a *acceptBatch) {
	tx.DeferWritten(insertEmails, acceptEmailsPG, a.emails)
	tx.DeferWritten(insertBodies, acceptBodiesPG, a.bodies)
	for start := 0; start < len(a.deliver); start += jobs.MaxDeliverBatch {
		tx.AddJob(jobs.DeliverBatchArgs{Emails: a.deliver[start:min(start+jobs.MaxDeliverBatch, len(a.deliver))]})
	}
}

// changed reports whether a conditional write touched a row.

// setScheduledAt moves an email still scheduled to at; false once it has
// left scheduled.
func setScheduledAt(ctx context.Context, tx *store.Tx, ws, id string, at, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET scheduled_at = ?, updated_at = ? WHERE workspace_id = ? AND id = ? AND status = 'scheduled'`,
		store.Millis(at), store.Millis(now), ws, id))
}

// cancelScheduled cancels an email still scheduled; false once it has left
// scheduled.
func cancelScheduled(ctx context.Context, tx *store.Tx, ws, id string, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = 'cancelled', updated_at = ? WHERE workspace_id = ? AND id = ? AND status = 'scheduled'`,
		store.Millis(now), ws, id))
}

// dueEmail is a scheduled email whose time has come.
type dueEmail struct{ id, ws string }

// dueScheduled lists up to limit scheduled emails due at now, oldest first.
func dueScheduled(ctx context.Context, q store.Querier, now time.Time, limit int) ([]dueEmail, error) {
	return store.QueryAll(ctx, q, func(sc store.Scanner) (dueEmail, error) {
		var d dueEmail
		return d, sc.Scan(&d.id, &d.ws)
	}, `SELECT e.id, e.workspace_id FROM emails e WHERE e.status = 'scheduled' AND e.scheduled_at <= ?
		ORDER BY e.scheduled_at LIMIT ?`, store.Millis(now), limit)
}

// failScheduled ends a scheduled email as failed with reason; false when it
// was no longer scheduled.
func failScheduled(ctx context.Context, tx *store.Tx, id, reason string, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = 'failed', last_error = ?, updated_at = ? WHERE id = ? AND status = 'scheduled'`,
		reason, store.Millis(now), id))
}

// queueScheduled moves a scheduled email that is due to queued; false when
// another pass took it or it moved.
func queueScheduled(ctx context.Context, tx *store.Tx, id string, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = 'queued', updated_at = ? WHERE id = ? AND status = 'scheduled' AND scheduled_at <= ?`,
		store.Millis(now), id, store.Millis(now)))
}

// endSimulated moves a test-mode email still queued or sending to its
// simulated status (a cancelled email, or one an earlier attempt played
// out, is left alone: store.ErrNotFound) and returns what its events carry.
func endSimulated(ctx context.Context, tx *store.Tx, ws, id string, status EmailStatus, lastError string, now time.Time) (from string, to []byte, subject string, tags []byte, err error) {
	err = tx.QueryRow(ctx, `UPDATE emails SET status = ?, last_error = ?, updated_at = ?
		WHERE workspace_id = ? AND id = ? AND status IN ('queued', 'sending')
		RETURNING COALESCE((SELECT s.from_addr FROM email_shared s WHERE s.id = emails.shared_id), from_addr), to_addrs, subject,
			COALESCE((SELECT s.tags FROM email_shared s WHERE s.id = emails.shared_id), tags)`,
		string(status), lastError, store.Millis(now), ws, id).Scan(&from, &to, &subject, &tags)
	return from, to, subject, tags, err
}

// markComplained moves a delivered email to complained; false when it
// already was.
func markComplained(ctx context.Context, tx *store.Tx, id string, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE emails SET status = 'complained', updated_at = ? WHERE id = ? AND status = 'delivered'`, store.Millis(now), id))
}

// Outgoing is an email as the delivery engine reads it, by id. The JSON
// columns come as stored text: recipients change shape as delivery goes,
// and the delivery engine decodes them.
type Outgoing struct {
	ID, WorkspaceID            string
	Status                     EmailStatus
	From, Subject, HTML, Text  string
	To, Cc, Bcc, ReplyTo       string // JSON arrays
	Headers, Attachments, Tags string // JSON
	Recipients                 string // JSON array of addresses or outcomes
	TestMode                   bool
	MessageID                  string
	TemplateID                 string // for analytics
	TopicID                    string // a topic send: each recipient gets its own links
	BodySource                 string // rendered at delivery (BodySource), not stored
	Track                      int    // tracking.TrackOpens | TrackClicks
	CreatedAt                  time.Time
	// Files are a dry run's attachments, decoded (Attachments is then
	// "[]"): a preflight of 40 MB is not encoded to JSON and back.
	Files []StoredAttachment
}

// outgoingColumns are the columns scanOutgoing reads, from emails e and
// its bodies (bodyJoin).
const outgoingColumns = `e.id, e.workspace_id, e.status, ` + fromSQL + `, e.to_addrs, ` + ccSQL + `, ` + bccSQL + `, ` + replyToSQL + `, e.subject,
		` + bodySQL + `, ` + headersSQL + `, ` + tagsSQL + `, e.test_mode, e.message_id, e.recipients, e.template_id, e.topic_id, ` + bodySourceSQL + `, ` + trackSQL + `, e.created_at`

// trackSQL is an email's tracking flags: its tracking row's, else its
// shared row's (a broadcast's emails book late: TrackingBooking), else 0.
const trackSQL = `COALESCE(` + tracking.FlagsSQL + `, s.track_flags, 0)`

func scanOutgoing(sc store.Scanner) (*Outgoing, error) {
	var o Outgoing
	var html, text sql.NullString
	var testMode int
	var created int64
	err := sc.Scan(&o.ID, &o.WorkspaceID, &o.Status, &o.From, &o.To, &o.Cc, &o.Bcc, &o.ReplyTo, &o.Subject,
		&html, &text, &o.Attachments, &o.Headers, &o.Tags, &testMode, &o.MessageID, &o.Recipients, &o.TemplateID, &o.TopicID, &o.BodySource, &o.Track, &created)
	if err != nil {
		return nil, err
	}
	o.HTML, o.Text, o.TestMode, o.CreatedAt = html.String, text.String, testMode != 0, store.FromMillis(created)
	o.MessageID = readMessageID(o.ID, o.From, o.MessageID)
	o.Recipients, err = withDeliveredTo(o.Recipients, o.To)
	return &o, err
}

// LoadOutgoing reads the email id (random, so it names one workspace's row)
// or store.ErrNotFound.
func LoadOutgoing(ctx context.Context, q store.Querier, id string) (*Outgoing, error) {
	return scanOutgoing(q.QueryRow(ctx, `SELECT `+outgoingColumns+` FROM emails e`+sharedJoin+bodyJoin+` WHERE e.id = ?`, id))
}

// LoadOutgoingMany reads the emails ids in one query (a delivery batch's),
// those whose html, text and attachments take at most maxBody bytes: the
// others, and those not found, are left out (a heavy one is read alone,
// when its turn comes, so that a batch never holds many large bodies).
func LoadOutgoingMany(ctx context.Context, q store.Querier, ids []string, maxBody int) ([]*Outgoing, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args, in := store.PaddedIn(nil, ids)
	return store.QueryAll(ctx, q, scanOutgoing, `SELECT `+outgoingColumns+` FROM emails e`+sharedJoin+bodyJoin+` WHERE e.id IN (`+in+`)
		AND COALESCE(octet_length(COALESCE(b.html, e.html)), 0) + COALESCE(octet_length(COALESCE(b.text_body, e.text_body)), 0)
			+ COALESCE(octet_length(COALESCE(b.attachments, e.attachments)), 0) <= ?`, append(args, maxBody)...)
}

// TrackingBooking is the tracking booking of an email that books late
// (tracking.Config.Booking): one with a shared row whose flags are set
// (AcceptMarketing), with the values Book took at hand-over before
// (00125). ok is false for any other email, and for one not found.
func TrackingBooking(ctx context.Context, q store.Querier, ws, id string) (tracking.Booking, bool, error) {
	var b tracking.Booking
	var from, tags string
	var created int64
	err := q.QueryRow(ctx, `SELECT s.track_flags, s.from_addr, s.mail_class, e.template_id, s.tags, e.created_at
		FROM emails e JOIN email_shared s ON s.id = e.shared_id WHERE e.workspace_id = ? AND e.id = ?`, ws, id).
		Scan(&b.Flags, &from, &b.MailClass, &b.TemplateID, &tags, &created)
	if errors.Is(err, store.ErrNotFound) || err == nil && b.Flags == 0 {
		return b, false, nil
	}
	if err != nil {
		return b, false, err
	}
	if a, err := ParseAddress(from); err == nil {
		from = a.Email
	}
	b.WorkspaceID, b.EmailID, b.Domain, b.At = ws, id, domainOf(from), store.FromMillis(created)
	if tags != "" && tags != "{}" {
		if err := json.Unmarshal([]byte(tags), &b.Tags); err != nil {
			return b, false, err
		}
	}
	return b, true, nil
}

// AddEngagement adds human opens and clicks to an email's counters (the
// tracking area's recorder, inside its transaction).
func (s *Service) AddEngagement(ctx context.Context, tx *store.Tx, workspaceID, emailID string, opens, clicks int64) error {
	_, err := tx.Exec(ctx, `UPDATE emails SET opens = opens + ?, clicks = clicks + ? WHERE workspace_id = ? AND id = ?`,
		opens, clicks, workspaceID, emailID)
	return err
}

// StatusOfSQL is the status of the email whose id is in column idCol, for
// another area's read of what became of emails it handed over (broadcast
// recipients); NULL when there is no such email.
func StatusOfSQL(idCol string) string {
	return `(SELECT em.status FROM emails em WHERE em.id = ` + idCol + `)`
}

// CancelQueued cancels, of the given emails, those still queued (not yet
// taken up by delivery: an email being sent goes), in the caller's
// transaction, and returns their ids. A broadcast's cancel uses it so that
// nothing it handed over leaves after the cancel is answered.
func CancelQueued(ctx context.Context, tx *store.Tx, workspaceID string, ids []string) ([]string, error) {
	var out []string
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		args := []any{store.Millis(time.Now()), workspaceID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := tx.Query(ctx, `UPDATE emails SET status = 'cancelled', updated_at = ? WHERE workspace_id = ? AND id IN (`+store.Placeholders(len(chunk))+`)
			AND status = 'queued' RETURNING id`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// finalStatuses are the statuses after which an email's body is never
// read to send again (retention may empty it).
var finalStatuses = []any{string(StatusDelivered), string(StatusBounced), string(StatusComplained), string(StatusFailed), string(StatusCancelled)}

// PurgeBodies empties the html, text and attachments of up to limit emails
// created before before that reached a final status: those stored apart
// (email_bodies) are deleted, those inline set to NULL, those rendered on
// read (body_source) no longer rendered. The email row, its status and
// counters stay. The candidates are read on the reader pool, so the writer
// is held only for the deletes.
func PurgeBodies(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error) {
	in := store.Placeholders(len(finalStatuses))
	args := append([]any{store.Millis(before)}, finalStatuses...)
	apart, err := db.Column(ctx, `SELECT b.email_id FROM email_bodies b JOIN emails e ON e.id = b.email_id
		WHERE e.created_at < ? AND e.status IN (`+in+`) LIMIT ?`, append(args, limit)...)
	if err != nil {
		return 0, err
	}
	inline, err := db.Column(ctx, `SELECT id FROM emails WHERE created_at < ? AND status IN (`+in+`)
		AND (html IS NOT NULL OR text_body IS NOT NULL OR body_source <> '') LIMIT ?`, append(args, limit)...)
	if err != nil {
		return 0, err
	}
	if len(apart)+len(inline) == 0 {
		return 0, nil
	}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		if len(apart) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM email_bodies WHERE email_id IN (`+store.Placeholders(len(apart))+`)`, apart...); err != nil {
				return err
			}
		}
		if len(inline) > 0 {
			_, err := tx.Exec(ctx, `UPDATE emails SET html = NULL, text_body = NULL, attachments = '[]', body_source = '' WHERE id IN (`+store.Placeholders(len(inline))+`)`, inline...)
			return err
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int64(len(apart) + len(inline)), nil
}

// claimMessageID records a client's Message-ID for email in the accepting
// transaction and reports whether it is new to the workspace: not claimed
// by another email, and not the Message-ID Mailroom gave one of its emails.
func claimMessageID(ctx context.Context, tx *store.Tx, ws, messageID, emailID string, now time.Time) (bool, error) {
	if id, ok := outbound.EmailIDOf(messageID); ok {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM emails WHERE id = ? AND workspace_id = ?`, id, ws).Scan(&one)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
	}
	return store.Changed(tx.Exec(ctx, `INSERT INTO email_message_ids (workspace_id, message_id, email_id, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (workspace_id, message_id) DO NOTHING`, ws, messageID, emailID, store.Millis(now)))
}
