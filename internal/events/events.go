// Package events is the event log. Every event the spec lists is written
// here in the same transaction as the state change that raises it, with its
// id (whd_) minted once; the webhook dispatcher fans undispatched rows out to
// endpoints, and an email's timeline (events[] on GET /v1/emails/{id}) is read
// from the same rows. Timeline-only entries (accepted, scheduled, cancelled,
// deferred) are stored as already dispatched so no webhook ever carries them.
package events

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Event kinds and their sequence numbers (the spec's event table).
const (
	EmailSent         = "email.sent"
	EmailDelivered    = "email.delivered"
	EmailBounced      = "email.bounced"
	EmailComplained   = "email.complained"
	EmailReceived     = "email.received"
	EmailFiltered     = "email.filtered"
	DomainVerified    = "domain.verified"
	WorkspaceThrottle = "workspace.throttled"
	WorkspacePaused   = "workspace.paused"
	WorkspaceResumed  = "workspace.resumed"
	RunStarted        = "automation.run.started"
	RunFailed         = "automation.run.failed"

	// Timeline-only entries: never sent as webhooks.
	EmailAccepted    = "email.accepted"
	EmailScheduled   = "email.scheduled"
	EmailRescheduled = "email.rescheduled"
	EmailCancelled   = "email.cancelled"
	EmailDeferred    = "email.deferred"
)

var sequences = map[string]int{
	EmailSent: 2, EmailDelivered: 3, EmailBounced: 3, EmailComplained: 4,
	EmailReceived: 1, EmailFiltered: 1,
	DomainVerified: 0, WorkspaceThrottle: 0, WorkspacePaused: 0, WorkspaceResumed: 0,
	RunStarted: 0, RunFailed: 0,
	EmailAccepted: 1, EmailScheduled: 1, EmailRescheduled: 1, EmailCancelled: 1, EmailDeferred: 2,
}

// IsWebhookEvent reports whether kind is one the spec delivers as a webhook.
func IsWebhookEvent(kind string) bool {
	switch kind {
	case EmailAccepted, EmailScheduled, EmailRescheduled, EmailCancelled, EmailDeferred:
		return false
	}
	_, ok := sequences[kind]
	return ok
}

// Sequence returns the spec's sequence number for kind.
func Sequence(kind string) (int, bool) {
	s, ok := sequences[kind]
	return s, ok
}

// Event is one raised event.
type Event struct {
	ID          string
	WorkspaceID string
	EmailID     string // empty when no message is behind it
	// MailboxID is the mailbox a received-mail event concerns (empty for
	// every other event): endpoints scoped to another mailbox skip it.
	MailboxID string
	Type      string
	Sequence  int
	CreatedAt time.Time
	Data      map[string]any
	// RawData, when set, is Data already encoded: a caller raising several
	// events with the same data encodes it once, outside its transaction.
	RawData json.RawMessage
	// DataIsEmail says Data is exactly EmailData of the email row EmailID
	// names (its from, to, subject, tags and test_mode) and WorkspaceID
	// its workspace: the event is stored in brief (see briefID), and every
	// read builds what it left out from the row again (emailDataOf), which
	// sending never changes once written. A broadcast's two events per
	// recipient cost the log about 290 bytes less each.
	DataIsEmail bool

	// What the analytics rollups need beyond Data (never stored with the
	// event, never in a webhook): the email's template and mail class, and
	// whether a bounce or complaint is a report after hand-over (a DSN or
	// ARF), which counts no new send. See countEvent.
	TemplateID    string
	MailClass     string
	AfterDelivery bool
}

// EmailData is the data every email.* event carries: email_id, from, to
// (array), subject, tags (object, {} when none) and test_mode for test sends.
func EmailData(emailID, from string, to []string, subject string, tags map[string]string, testMode bool) map[string]any {
	t := make(map[string]string, len(tags))
	for k, v := range tags {
		t[k] = v
	}
	if to == nil {
		to = []string{}
	}
	d := map[string]any{"email_id": emailID, "from": from, "to": to, "subject": subject, "tags": t}
	if testMode {
		d["test_mode"] = true
	}
	return d
}

// emailData is EmailData as a struct, its fields in the order encoding/json
// writes a map's keys, so that both encode to the same bytes.
type emailData struct {
	EmailID  string            `json:"email_id"`
	From     string            `json:"from"`
	Subject  string            `json:"subject"`
	Tags     map[string]string `json:"tags"`
	TestMode bool              `json:"test_mode,omitempty"`
	To       []string          `json:"to"`
}

// EmailDataJSON is json.Marshal(EmailData(...)), encoded without building
// and walking the map: the accepting path encodes it for every test send.
func EmailDataJSON(emailID, from string, to []string, subject string, tags map[string]string, testMode bool) ([]byte, error) {
	if tags == nil {
		tags = map[string]string{}
	}
	if to == nil {
		to = []string{}
	}
	return json.Marshal(emailData{EmailID: emailID, From: from, Subject: subject, Tags: tags, TestMode: testMode, To: to})
}

// Envelope is the webhook body: {id, event, timestamp, sequence, data}.
type Envelope struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp string          `json:"timestamp"`
	Sequence  int             `json:"sequence"`
	Data      json.RawMessage `json:"data"`
}

// TimeFormat is ISO 8601 UTC with milliseconds, as the spec asks.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// An email's event raised with DataIsEmail is stored in brief: without its
// data and its workspace (both its email row's: emailDataOf, wsExpr), and,
// when its kind is raised so at most once per email (briefMasks), without
// its id, which is its email's id masked (briefID), and its kind, which its
// sequence tells (briefKind). A brief row holds its seq, email id, sequence
// and time; reads give it back whole, as it was raised (whole).
// Rows written whole before (or by any other raise) read as they are.

// briefMasks are the kinds whose DataIsEmail events are stored without an
// id: delivery raises them so only in the one transaction that delivers
// every To address, which happens once per email. Each kind's mask keeps
// the two events' ids apart.
var briefMasks = map[string][10]byte{EmailSent: maskOf(EmailSent), EmailDelivered: maskOf(EmailDelivered)}

func maskOf(kind string) [10]byte {
	sum := sha256.Sum256([]byte("mailroom brief event " + kind))
	return [10]byte(sum[:10])
}

// briefID is the id of the kind's brief event about emailID: the email's id
// (time and random bits) with the kind's mask in its random bits, so no two
// events share one, and an id given back names its email (briefEmail).
// ok is false when kind has no mask or emailID is not a minted id.
func briefID(kind, emailID string) (string, bool) {
	m, ok := briefMasks[kind]
	if !ok {
		return "", false
	}
	return ids.Mask("whd", emailID, m)
}

// whole gives an event read from the log the id and kind it was stored
// without (a brief row of a kind in briefMasks: its sequence tells which).
func whole(id, kind *string, sequence int, emailID string) {
	if *kind == "" {
		*kind = briefKind(sequence)
	}
	if *id == "" {
		*id, _ = briefID(*kind, emailID)
	}
}

// briefKind is the kind of a brief row stored without one, by its sequence.
func briefKind(sequence int) string {
	if sequence == sequences[EmailSent] {
		return EmailSent
	}
	return EmailDelivered
}

// typeSQL is an events row's kind (ev.type), for a query over events ev.
const typeSQL = `CASE WHEN ev.type <> '' THEN ev.type WHEN ev.sequence = 2 THEN 'email.sent' ELSE 'email.delivered' END`

// briefEmails are, for each event id among eventIDs, the emails whose
// brief events could have it, by kind (the caller checks the rows found).
func briefEmails(eventIDs []string) []string {
	var out []string
	for _, id := range eventIDs {
		if !ids.HasPrefix(id, "whd") {
			continue
		}
		for _, m := range briefMasks {
			if em, ok := ids.Mask("em", id, m); ok {
				out = append(out, em)
			}
		}
	}
	return out
}

// wsExpr is an events row's workspace: a brief row's is its email's.
const wsExpr = `(CASE WHEN events.workspace_id = '' THEN COALESCE((SELECT em.workspace_id FROM emails em WHERE em.id = events.email_id), '') ELSE events.workspace_id END)`

var eventColumns = []string{"id", "workspace_id", "email_id", "type", "sequence", "created_at", "data", "webhook", "dispatched", "mailbox_id"}

// Raise writes an event inside tx and returns it with its id. The caller's
// transaction makes the event exactly as durable as the change behind it.
func Raise(ctx context.Context, tx *store.Tx, ev Event) (Event, error) {
	seq, ok := sequences[ev.Type]
	if !ok {
		return ev, fmt.Errorf("events: unknown kind %q", ev.Type)
	}
	ev.Sequence = seq
	brief := ev.DataIsEmail && ev.EmailID != ""
	storedID, storedWS, storedType := ev.ID, ev.WorkspaceID, ev.Type
	if brief {
		storedWS = ""
		if ev.ID == "" {
			if id, ok := briefID(ev.Type, ev.EmailID); ok {
				ev.ID, storedType = id, ""
			}
		}
	}
	if ev.ID == "" {
		ev.ID = ids.New("whd")
		storedID = ev.ID
	}
	if ev.CreatedAt.IsZero() {
		return ev, fmt.Errorf("events: %s raised without a time", ev.Type)
	}
	if ev.Data == nil {
		ev.Data = map[string]any{}
	}
	data := []byte(ev.RawData)
	if brief {
		data = []byte{} // '': never what json.Marshal writes
	} else if data == nil {
		var err error
		if data, err = json.Marshal(ev.Data); err != nil {
			return ev, err
		}
	}
	var emailID, mailboxID any
	if ev.EmailID != "" {
		emailID = ev.EmailID
	}
	countEvent(tx, ev)
	meterEvent(tx, ev)
	if ev.MailboxID != "" {
		mailboxID = ev.MailboxID
	}
	// Events are only read back after commit (timeline, dispatcher), so
	// they go in the transaction's multi-row inserts.
	if !IsWebhookEvent(ev.Type) {
		tx.DeferInsert("events", eventColumns, storedID, storedWS, emailID, storedType, ev.Sequence, store.Millis(ev.CreatedAt), string(data), 0, 1, mailboxID)
		return ev, nil
	}
	tx.DeferInsert("events", eventColumns, storedID, storedWS, emailID, storedType, ev.Sequence, store.Millis(ev.CreatedAt), string(data), 1, fanoutOf(tx).flag(ev.WorkspaceID), mailboxID)
	return ev, nil
}

// fanout settles, once per transaction, which raised webhook events the
// dispatcher must fan out: only those of workspaces that have an endpoint
// (enabled or not: a disabled one holds its events). The others are written
// as already dispatched, so a workspace without webhooks costs the event log
// one insert per event and nothing more; before, the dispatcher rewrote
// every row (an UPDATE of an indexed column) only to find nobody listening.
// An endpoint created while the transaction is under way may miss its
// events; it receives those of every request that arrived after its
// creation was answered.
type fanout struct {
	flags map[string]*dispatchFlag
	known map[string]bool // workspace -> has an endpoint, as a caller read it (KnownListeners)
}

// KnownListeners tells the transaction's fanout which of workspaces have a
// webhook endpoint (those in listened), read by the caller in a query it
// made anyway, so that settle asks only about the others.
func KnownListeners(tx *store.Tx, workspaces []string, listened map[string]bool) {
	f := fanoutOf(tx)
	if f.known == nil {
		f.known = map[string]bool{}
	}
	for _, w := range workspaces {
		f.known[w] = listened[w]
	}
}

// Listening marks in listened the workspaces among ws that have a webhook
// endpoint. The webhooks area owns endpoints and imports this package, so
// app hands its lookup in with UseListeners.
type Listening func(ctx context.Context, tx *store.Tx, ws []string, listened map[string]bool) error

// listening is the lookup in use: until UseListeners, every workspace
// counts as listened to, which only costs the dispatcher a look.
var listening Listening = func(_ context.Context, _ *store.Tx, ws []string, listened map[string]bool) error {
	for _, w := range ws {
		listened[w] = true
	}
	return nil
}

// UseListeners sets the lookup settle uses (webhooks.Listening).
func UseListeners(l Listening) { listening = l }

type fanoutKey struct{}

func fanoutOf(tx *store.Tx) *fanout {
	return tx.Local(fanoutKey{}, func() any {
		f := &fanout{flags: map[string]*dispatchFlag{}}
		tx.BeforeFlush(f.settle)
		return f
	}).(*fanout)
}

func (f *fanout) flag(workspaceID string) *dispatchFlag {
	fl, ok := f.flags[workspaceID]
	if !ok {
		fl = &dispatchFlag{}
		f.flags[workspaceID] = fl
	}
	return fl
}

// settle marks the flags of workspaces without endpoints dispatched and
// wakes the dispatcher after commit if any event is left for it.
func (f *fanout) settle(ctx context.Context, tx *store.Tx) error {
	listened := map[string]bool{}
	var ws []string
	for w := range f.flags {
		if l, ok := f.known[w]; ok {
			listened[w] = l
		} else {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	if len(ws) > 0 {
		if err := listening(ctx, tx, ws, listened); err != nil {
			return err
		}
	}
	wake := false
	for w, fl := range f.flags {
		if listened[w] {
			fl.v = 0
			wake = true
		} else {
			fl.v = 1
		}
	}
	if wake {
		db := tx.DB()
		tx.AfterCommit(func() { db.Signal(SignalTopic) })
	}
	return nil
}

// dispatchFlag is the dispatched column of a webhook event, settled by
// fanout.settle before the row is written. Until then it reads 0 (the
// dispatcher looks at the event), the safe side.
type dispatchFlag struct{ v int64 }

func (d *dispatchFlag) Value() (driver.Value, error) { return d.v, nil }

// Timelines returns the events of several emails of one workspace, oldest
// first per email, in one query (a list page of emails).
func Timelines(ctx context.Context, db *store.DB, workspaceID string, emailIDs []string) (map[string][]Event, error) {
	out := make(map[string][]Event, len(emailIDs))
	if len(emailIDs) == 0 {
		return out, nil
	}
	args, in := store.PaddedIn(nil, emailIDs)
	rows, err := db.Query(ctx, `SELECT email_id, id, type, sequence, created_at, data FROM events
		WHERE email_id IN (`+in+`) AND `+wsExpr+` = ? ORDER BY seq`, append(args, workspaceID)...)
	if err != nil {
		return nil, err
	}
	evs, err := scanTimeline(ctx, db, rows, func(ev *Event) []any {
		ev.WorkspaceID = workspaceID
		return []any{&ev.EmailID, &ev.ID, &ev.Type, &ev.Sequence}
	})
	for _, ev := range evs {
		out[ev.EmailID] = append(out[ev.EmailID], ev)
	}
	return out, err
}

// EmailsOf maps each of the workspace's events among ids to the email it
// is about (events about no email are left out): a delivery log's rows link
// to their email.
func EmailsOf(ctx context.Context, db *store.DB, workspaceID string, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	args, in := store.PaddedIn(nil, ids)
	q := `SELECT id, type, sequence, email_id FROM events WHERE id IN (` + in + `) AND email_id IS NOT NULL AND ` + wsExpr + ` = ?`
	args = append(args, workspaceID)
	if cands := briefEmails(ids); len(cands) > 0 {
		bargs, bin := store.PaddedIn(nil, cands)
		q += ` UNION ALL SELECT id, type, sequence, email_id FROM events WHERE id = '' AND email_id IN (` + bin + `) AND ` + wsExpr + ` = ?`
		args = append(append(args, bargs...), workspaceID)
	}
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, kind, email string
		var sequence int
		if err := rows.Scan(&id, &kind, &sequence, &email); err != nil {
			return nil, err
		}
		whole(&id, &kind, sequence, email)
		if email != "" && asked[id] {
			out[id] = email
		}
	}
	return out, rows.Err()
}

// Timeline returns the events of one email, oldest first.
func Timeline(ctx context.Context, db *store.DB, workspaceID, emailID string) ([]Event, error) {
	rows, err := db.Query(ctx, `SELECT id, type, sequence, created_at, data FROM events
		WHERE email_id = ? AND `+wsExpr+` = ? ORDER BY seq`, emailID, workspaceID)
	if err != nil {
		return nil, err
	}
	return scanTimeline(ctx, db, rows, func(ev *Event) []any {
		ev.WorkspaceID, ev.EmailID = workspaceID, emailID
		return []any{&ev.ID, &ev.Type, &ev.Sequence}
	})
}

// scanTimeline reads timeline rows, each the columns dest points at, then
// created_at and data, and closes rows; the data stored without (an email
// row's, a reference) is filled by complete, as on every read of the log.
func scanTimeline(ctx context.Context, db *store.DB, rows *sql.Rows, dest func(*Event) []any) ([]Event, error) {
	var out []Event
	var stored []Stored
	for rows.Next() {
		var ev Event
		var at int64
		var data string
		if err := rows.Scan(append(dest(&ev), &at, &data)...); err != nil {
			rows.Close()
			return nil, err
		}
		ev.CreatedAt = store.FromMillis(at)
		whole(&ev.ID, &ev.Type, ev.Sequence, ev.EmailID)
		out, stored = append(out, ev), append(stored, Stored{Type: ev.Type, EmailID: ev.EmailID, Data: []byte(data)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := complete(ctx, db, stored); err != nil {
		return nil, err
	}
	for i := range out {
		_ = json.Unmarshal(stored[i].Data, &out[i].Data)
	}
	return out, nil
}

// emailDataOf is the data of the events raised with DataIsEmail about the
// given emails, by email id: EmailDataJSON of each email row, as the raiser
// would have encoded it. The email rows are the sending area's, never
// rewritten in these columns and never deleted; a From and tags many
// emails share are in their email_shared row (00123).
func emailDataOf(ctx context.Context, db *store.DB, emailIDs []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	slices.Sort(emailIDs)
	emailIDs = slices.Compact(emailIDs)
	for start := 0; start < len(emailIDs); start += 512 {
		args, in := store.PaddedIn(nil, emailIDs[start:min(start+512, len(emailIDs))])
		rows, err := db.Query(ctx, `SELECT e.id, COALESCE(s.from_addr, e.from_addr), e.to_addrs, e.subject, COALESCE(s.tags, e.tags), e.test_mode
			FROM emails e LEFT JOIN email_shared s ON s.id = e.shared_id WHERE e.id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, from, to, subject, tags string
			var testMode int
			if err := rows.Scan(&id, &from, &to, &subject, &tags, &testMode); err != nil {
				rows.Close()
				return nil, err
			}
			var toList []string
			var tagMap map[string]string
			if err := errors.Join(json.Unmarshal([]byte(to), &toList), json.Unmarshal([]byte(tags), &tagMap)); err != nil {
				rows.Close()
				return nil, fmt.Errorf("events: the data of email %s: %w", id, err)
			}
			if out[id], err = EmailDataJSON(id, from, toList, subject, tagMap, testMode != 0); err != nil {
				rows.Close()
				return nil, err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MarshalEnvelope renders the webhook envelope of an event row: what
// json.Marshal of an Envelope gives, with data (the row's, which Raise
// wrote as json.Marshal wrote it: compact, HTML-escaped) copied as it is
// instead of scanned and compacted again (a fifth of a received message's
// webhook CPU, its text and html being in it).
func MarshalEnvelope(id, kind string, sequence int, at time.Time, data []byte) ([]byte, error) {
	head, err := json.Marshal(Envelope{ID: id, Event: kind, Timestamp: at.UTC().Format(TimeFormat), Sequence: sequence})
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		data = []byte("null")
	}
	// head ends with "data":null}.
	head = head[:len(head)-len("null}")]
	out := make([]byte, 0, len(head)+len(data)+1)
	return append(append(append(out, head...), data...), '}'), nil
}

// SignalTopic is the store signal raised after a transaction that wrote a
// webhook event commits, so the dispatcher need not wait for its next poll.
const SignalTopic = "events"

// WebhookSeq scans into seq the sequence number of the workspace's webhook
// event id (store.ErrNotFound when there is none). The log has no index on id:
// a manual replay scans the workspace's events rather than every raise
// paying for an index; the id of a brief row names its email, whose
// events are found through events_email.
func WebhookSeq(ctx context.Context, db *store.DB, workspaceID, id string, seq any) error {
	for kind := range briefMasks {
		if em, ok := ids.Mask("em", id, briefMasks[kind]); ok {
			if want, _ := briefID(kind, em); want != id {
				continue // not the canonical spelling of an id
			}
			err := db.QueryRow(ctx, `SELECT seq FROM events WHERE email_id = ? AND id = '' AND type = '' AND sequence = ? AND webhook = 1 AND `+wsExpr+` = ?`,
				em, sequences[kind], workspaceID).Scan(seq)
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	return db.QueryRow(ctx, `SELECT seq FROM events WHERE id = ? AND webhook = 1 AND `+wsExpr+` = ?`, id, workspaceID).Scan(seq)
}

// MailboxOf reads the mailbox a webhook event concerns and the email
// behind it ("" for none), so a replay reaches only the endpoints the event
// could have reached.
func MailboxOf(ctx context.Context, db *store.DB, seq int64) (mailboxID, emailID string, err error) {
	err = db.QueryRow(ctx, `SELECT COALESCE(mailbox_id, ''), COALESCE(email_id, '') FROM events WHERE seq = ?`, seq).Scan(&mailboxID, &emailID)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", nil
	}
	return mailboxID, emailID, err
}

// Claimed is an event the webhook dispatcher took for fan-out.
type Claimed struct {
	Seq         int64
	ID          string
	WorkspaceID string
	Type        string
	At          int64  // unix ms
	MailboxID   string // "" when the event concerns no one mailbox
	EmailID     string // "" when no email is behind the event
}

// ClaimUndispatched flips up to limit undispatched events to dispatched
// inside tx and returns exactly the rows this statement flipped: the outer
// dispatched = 0 is re-checked on PostgreSQL after any row lock wait, so two
// nodes never fan out the same event.
func ClaimUndispatched(ctx context.Context, tx *store.Tx, limit int) ([]Claimed, error) {
	rows, err := tx.Query(ctx, `UPDATE events SET dispatched = 1 WHERE seq IN
		(SELECT seq FROM events WHERE dispatched = 0 ORDER BY seq LIMIT ?`+tx.SkipLocked()+`)
		AND dispatched = 0 RETURNING seq, id, `+wsExpr+`, type, sequence, created_at, COALESCE(mailbox_id, ''), COALESCE(email_id, '')`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Claimed
	for rows.Next() {
		var c Claimed
		var sequence int
		if err := rows.Scan(&c.Seq, &c.ID, &c.WorkspaceID, &c.Type, &sequence, &c.At, &c.MailboxID, &c.EmailID); err != nil {
			return nil, err
		}
		whole(&c.ID, &c.Type, sequence, c.EmailID)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Envelopes reads the events with the given seqs (the primary key: events
// have no index on id) and hands each one's id, type and webhook envelope
// to each.
func Envelopes(ctx context.Context, db *store.DB, seqs []any, each func(id, kind string, body []byte)) error {
	for start := 0; start < len(seqs); start += 512 {
		args, in := store.PaddedIn(nil, seqs[start:min(start+512, len(seqs))])
		rows, err := db.Query(ctx, `SELECT id, type, sequence, created_at, data, COALESCE(email_id, '') FROM events WHERE seq IN (`+in+`)`, args...)
		if err != nil {
			return err
		}
		var got []Stored
		for rows.Next() {
			var s Stored
			var at int64
			var data string
			if err := rows.Scan(&s.ID, &s.Type, &s.Sequence, &at, &data, &s.EmailID); err != nil {
				rows.Close()
				return err
			}
			s.At, s.Data = store.FromMillis(at), []byte(data)
			whole(&s.ID, &s.Type, s.Sequence, s.EmailID)
			got = append(got, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := complete(ctx, db, got); err != nil {
			return err
		}
		for _, s := range got {
			body, err := s.Envelope()
			if err != nil {
				return err
			}
			each(s.ID, s.Type, body)
		}
	}
	return nil
}

// complete gives the events read from the log the data they were stored
// without: an email's row (DataIsEmail), a received message (resolve).
func complete(ctx context.Context, db *store.DB, evs []Stored) error {
	if err := withEmailData(ctx, db, evs); err != nil {
		return err
	}
	return resolve(ctx, db, evs)
}

// withEmailData gives the events stored without their data (DataIsEmail)
// the data of their email row.
func withEmailData(ctx context.Context, db *store.DB, evs []Stored) error {
	var derived []string
	for _, s := range evs {
		if len(s.Data) == 0 && s.EmailID != "" {
			derived = append(derived, s.EmailID)
		}
	}
	if len(derived) == 0 {
		return nil
	}
	byEmail, err := emailDataOf(ctx, db, derived)
	if err != nil {
		return err
	}
	for i, s := range evs {
		if len(s.Data) == 0 && s.EmailID != "" {
			evs[i].Data = byEmail[s.EmailID]
		}
	}
	return nil
}

// LastTypeColumn is a column expression for a query over emails aliased
// e: the type of the email's newest event, or the empty string. A listing
// folds it in rather than asking once per email.
const LastTypeColumn = `COALESCE((SELECT ` + typeSQL + ` FROM events ev WHERE ev.email_id = e.id AND ev.workspace_id IN (e.workspace_id, '') ORDER BY ev.seq DESC LIMIT 1), '')`

// Purge deletes up to limit of the oldest events created before before that
// the dispatcher has fanned out (timeline and webhook history; an event
// still waiting for fan-out is kept). Oldest by seq, so a pass that finds
// nothing old reads one short page, not the table.
func Purge(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error) {
	rows, err := db.Query(ctx, `SELECT seq, created_at, dispatched FROM events ORDER BY seq LIMIT ?`, limit)
	if err != nil {
		return 0, err
	}
	var old []any
	for rows.Next() {
		var seq, at, dispatched int64
		if err := rows.Scan(&seq, &at, &dispatched); err != nil {
			rows.Close()
			return 0, err
		}
		if at < store.Millis(before) && dispatched == 1 {
			old = append(old, seq)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(old) == 0 {
		return 0, err
	}
	res, err := db.Exec(ctx, `DELETE FROM events WHERE seq IN (`+store.Placeholders(len(old))+`)`, old...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// The log read in order: the event stream (GET /v1/events/stream) and bulk replays.

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
// seq in (after, upto], oldest first. The range walks the primary key (the
// workspace test, an expression, is no index's: a reader keeps the range
// short; no index on (workspace_id, seq) slows every raise).
func WebhookEventsIn(ctx context.Context, db *store.DB, workspaceID string, after, upto int64, limit int) ([]Stored, error) {
	rows, err := db.Query(ctx, `SELECT seq, id, type, sequence, created_at, data, COALESCE(mailbox_id, ''), COALESCE(email_id, '')
		FROM events WHERE seq > ? AND seq <= ? AND `+wsExpr+` = ? AND webhook = 1 ORDER BY seq LIMIT ?`,
		after, upto, workspaceID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := scanStored(rows)
	if err != nil {
		return nil, err
	}
	return out, complete(ctx, db, out)
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
		whole(&s.ID, &s.Type, s.Sequence, s.EmailID)
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
		FROM events WHERE email_id = ? AND `+wsExpr+` = ? AND webhook = 1 ORDER BY seq LIMIT ?`, emailID, workspaceID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := scanStored(rows)
	if err != nil {
		return nil, err
	}
	return out, complete(ctx, db, out)
}
