package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The webhooks area's reads and writes: endpoints (webhooks), the delivery
// queue (webhook_deliveries) and the attempt log (webhook_attempts). Every
// statement on them is in this file.

const endpointColumns = `id, workspace_id, url, events, headers, active, disabled_reason, disabled_at,
	consecutive_failures, last_success_at, last_failure_at, previous_secret_until, created_at, updated_at, COALESCE(mailbox_id, ''), svix_signatures`

// holdQueued moves an endpoint's queued deliveries into the held queue (its
// endpoint was just disabled) and trims the queue to HoldMax.
func holdQueued(ctx context.Context, tx *store.Tx, webhookID string) error {
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET held = 1 WHERE webhook_id = ? AND held = 0`, webhookID); err != nil {
		return err
	}
	return trimHeld(ctx, tx, webhookID)
}

// trimHeld keeps the newest HoldMax held events of an endpoint and drops
// the older ones, as the spec's state table says.
func trimHeld(ctx context.Context, tx *store.Tx, webhookID string) error {
	_, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 AND seq NOT IN
		(SELECT seq FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 ORDER BY event_at DESC, seq DESC LIMIT ?)`,
		webhookID, webhookID, HoldMax)
	return err
}

// releaseHeld makes an endpoint's held events due now, after dropping those
// older than HoldTTL. Attempt counts are kept: the curve goes on where it
// stopped.
func releaseHeld(ctx context.Context, tx *store.Tx, webhookID string, now time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 AND event_at < ?`,
		webhookID, store.Millis(now.Add(-HoldTTL))); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET held = 0, due_at = ?, next_attempt_at = ?, claim = NULL
		WHERE webhook_id = ? AND held = 1`, store.Millis(now), store.Millis(now), webhookID)
	return err
}

// ListenersQuery is the read the send path folds into its one batch query
// (sending's lookupSuppressions): rows (tag, workspace_id, empty, empty) of the
// workspaces among ws with at least one endpoint, with tag a constant first
// column that tells these rows from the other reads of a UNION ALL. args
// gains the workspace ids.
func ListenersQuery(tag int, args []any, ws []string) (string, []any) {
	args, in := store.PaddedIn(args, ws)
	return `SELECT DISTINCT ` + strconv.Itoa(tag) + `, workspace_id, '', '' FROM webhooks WHERE workspace_id IN (` + in + `)`, args
}

// Listening marks in listened the workspaces among ws that have an
// endpoint, enabled or not (events.Listening).
func Listening(ctx context.Context, tx *store.Tx, ws []string, listened map[string]bool) error {
	for chunk := range slices.Chunk(ws, 512) {
		q, args := ListenersQuery(0, nil, chunk)
		rows, err := tx.Read(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var tag int
			var w, a, b string
			if err := rows.Scan(&tag, &w, &a, &b); err != nil {
				rows.Close()
				return err
			}
			listened[w] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// fillRetries attaches the retry object to the rows that are the newest
// attempt of an event still owed attempts: its queue row exists and has
// made exactly that many attempts.
func (s *Service) fillRetries(ctx context.Context, ds []Delivery, kinds []string) error {
	var evIDs []any
	for i, d := range ds {
		if kinds[i] == "event" && d.Attempt < MaxAttempts {
			evIDs = append(evIDs, d.EventID)
		}
	}
	if len(evIDs) == 0 {
		return nil
	}
	type key struct{ webhook, event string }
	type queued struct {
		attempts int
		next     int64
		held     bool
	}
	owed := map[key]queued{}
	args, in := store.PaddedIn(nil, evIDs)
	rows, err := s.db.Query(ctx, `SELECT webhook_id, event_id, attempts, next_attempt_at, held FROM webhook_deliveries
		WHERE event_id IN (`+in+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		var q queued
		var held int
		if err := rows.Scan(&k.webhook, &k.event, &q.attempts, &q.next, &held); err != nil {
			return err
		}
		q.held = held == 1
		owed[k] = q
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range ds {
		d := &ds[i]
		q, ok := owed[key{d.WebhookID, d.EventID}]
		if kinds[i] != "event" || !ok || q.attempts != d.Attempt || q.attempts >= MaxAttempts {
			continue
		}
		r := &Retry{NextAttempt: q.attempts + 1, AttemptsMade: q.attempts, AttemptsRemaining: MaxAttempts - q.attempts}
		if !q.held {
			t := store.FromMillis(q.next)
			r.NextAttemptAt = &t
		}
		d.Retry = r
	}
	return nil
}

// noMailbox marks an email event whose email was not sent from a mailbox:
// no endpoint scoped to a mailbox takes it.
const noMailbox = "-"

// attributeEmails sets, on each event about an email of a workspace in
// scoped (one with an endpoint scoped to a mailbox), the mailbox the email
// was sent from, or noMailbox: such an endpoint then takes the events of its
// own mailbox's outgoing mail only, never another's.
func (s *Service) attributeEmails(ctx context.Context, q store.Querier, evs []events.Claimed, scoped map[string]bool) error {
	var ids []string
	for _, e := range evs {
		if e.EmailID != "" && e.MailboxID == "" && scoped[e.WorkspaceID] {
			ids = append(ids, e.EmailID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sender := map[string]string{}
	if s.sentFrom != nil {
		var err error
		if sender, err = s.sentFrom(ctx, q, ids); err != nil {
			return err
		}
	}
	for i := range evs {
		e := &evs[i]
		if e.EmailID == "" || e.MailboxID != "" || !scoped[e.WorkspaceID] {
			continue
		}
		if e.MailboxID = sender[e.EmailID]; e.MailboxID == "" {
			e.MailboxID = noMailbox
		}
	}
	return nil
}

// loadSubscribers reads the endpoints of the workspaces behind a batch of
// events.
func loadSubscribers(ctx context.Context, tx *store.Tx, evs []events.Claimed) (map[string][]subscriber, error) {
	var wsIDs []any
	seen := map[string]bool{}
	for _, e := range evs {
		if !seen[e.WorkspaceID] {
			seen[e.WorkspaceID] = true
			wsIDs = append(wsIDs, e.WorkspaceID)
		}
	}
	out := map[string][]subscriber{}
	for chunk := range slices.Chunk(wsIDs, 512) {
		args, in := store.PaddedIn(nil, chunk)
		rows, err := tx.Query(ctx, `SELECT id, workspace_id, events, active, COALESCE(mailbox_id, '') FROM webhooks WHERE workspace_id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var sub subscriber
			var ws, evJSON string
			var active int
			if err := rows.Scan(&sub.id, &ws, &evJSON, &active, &sub.mailbox); err != nil {
				rows.Close()
				return nil, err
			}
			_ = json.Unmarshal([]byte(evJSON), &sub.events)
			sub.active = active == 1
			out[ws] = append(out[ws], sub)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// housekeep drops held events past the hold window and delivery log rows
// past their retention, counted on the meter.
func (s *Service) housekeep(ctx context.Context) error {
	now := s.clock.Now()
	if _, err := s.db.Exec(ctx, `DELETE FROM webhook_deliveries WHERE held = 1 AND event_at < ?`, store.Millis(now.Add(-HoldTTL))); err != nil {
		return err
	}
	// In slices, so that a large backlog never holds the writer for long.
	keep := s.logRetention
	if keep <= 0 {
		keep = LogRetention
	}
	cutoff := store.Millis(now.Add(-keep))
	for {
		res, err := s.db.Exec(ctx, `DELETE FROM webhook_attempts WHERE id IN
			(SELECT id FROM webhook_attempts WHERE created_at < ? LIMIT 5000)`, cutoff)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		s.meter.Purged("webhook_logs", n)
		if n < 5000 {
			return nil
		}
	}
}

func (p *pool) claimSQL(exclude int) string {
	var b strings.Builder
	b.WriteString(`UPDATE webhook_deliveries SET due_at = ?, claim = ? WHERE seq IN
		(SELECT seq FROM webhook_deliveries WHERE held = 0 AND due_at <= ?`)
	if exclude > 0 {
		b.WriteString(` AND webhook_id NOT IN (` + store.Placeholders(exclude) + `)`)
	}
	b.WriteString(` ORDER BY due_at LIMIT ?` + p.s.db.SkipLocked())
	// Re-checked after a lock wait on PostgreSQL: only rows still due are
	// taken, so two nodes never lease the same row.
	b.WriteString(`) AND held = 0 AND due_at <= ?
		RETURNING seq, webhook_id, workspace_id, event_id, event_seq, attempts, next_attempt_at`)
	return b.String()
}

func (s *Service) loadTargets(ctx context.Context, idList []any, now time.Time) (map[string]target, error) {
	out := make(map[string]target, len(idList))
	for start := 0; start < len(idList); start += 512 {
		args, in := store.PaddedIn(nil, idList[start:min(start+512, len(idList))])
		rows, err := s.db.Query(ctx, `SELECT id, url, headers, secret, previous_secret, previous_secret_until FROM webhooks WHERE id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, url, hJSON, sealed string
			var prev sql.NullString
			var prevUntil sql.NullInt64
			if err := rows.Scan(&id, &url, &hJSON, &sealed, &prev, &prevUntil); err != nil {
				rows.Close()
				return nil, err
			}
			t := target{url: url}
			_ = json.Unmarshal([]byte(hJSON), &t.headers)
			var prevP *string
			var untilP *int64
			if prev.Valid {
				prevP = &prev.String
			}
			if prevUntil.Valid {
				untilP = &prevUntil.Int64
			}
			t.secrets, err = s.signingSecrets(sealed, prevP, untilP, now)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func insertLogRows(ctx context.Context, tx *store.Tx, rows []logRow) error {
	const chunk = 60
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(start+chunk, len(rows))]
		args := make([]any, 0, len(part)*logRowColumns)
		for _, r := range part {
			args = append(args, r.args()...)
		}
		one := "(" + store.Placeholders(logRowColumns) + "),"
		q := `INSERT INTO webhook_attempts (id, workspace_id, webhook_id, event_id, event_seq, event, kind, attempt, status_code,
			response_body, duration_ms, error, payload, created_at) VALUES ` + strings.TrimSuffix(strings.Repeat(one, len(part)), ",")
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// heldIfDisabled keeps a row that goes back to the queue in the held queue
// when its endpoint was disabled meanwhile.
const heldIfDisabled = `held = COALESCE((SELECT 1 - w.active FROM webhooks w WHERE w.id = webhook_deliveries.webhook_id), held)`

// applyTally updates an endpoint's counters after a batch and disables it
// on a 410, or on AutoDisableFailures consecutive failures with nothing
// accepted for AutoDisableSilence. It reports whether it disabled it.
func applyTally(ctx context.Context, tx *store.Tx, id string, t *endpointTally, now time.Time) (bool, error) {
	var lastFail any
	if !t.lastFail.IsZero() {
		lastFail = store.Millis(t.lastFail)
	}
	var err error
	if t.successes > 0 {
		_, err = tx.Exec(ctx, `UPDATE webhooks SET consecutive_failures = ?, last_success_at = ?, accepted_at = ?,
			last_failure_at = COALESCE(?, last_failure_at) WHERE id = ?`,
			t.tail, store.Millis(t.lastOK), store.Millis(t.lastOK), lastFail, id)
	} else {
		_, err = tx.Exec(ctx, `UPDATE webhooks SET consecutive_failures = consecutive_failures + ?, last_failure_at = ? WHERE id = ?`,
			t.tail, lastFail, id)
	}
	if err != nil || t.tail == 0 {
		return false, err
	}
	var res interface{ RowsAffected() (int64, error) }
	if t.gone {
		res, err = tx.Exec(ctx, `UPDATE webhooks SET active = 0, disabled_reason = ?, disabled_at = ?, updated_at = ? WHERE id = ? AND active = 1`,
			DisabledGone, store.Millis(now), store.Millis(now), id)
	} else {
		res, err = tx.Exec(ctx, `UPDATE webhooks SET active = 0, disabled_reason = ?, disabled_at = ?, updated_at = ?
			WHERE id = ? AND active = 1 AND consecutive_failures >= ? AND accepted_at <= ?`,
			DisabledFailing, store.Millis(now), store.Millis(now), id, AutoDisableFailures, store.Millis(now.Add(-AutoDisableSilence)))
	}
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// ReleaseClaims puts the delivery rows leased by node (every leased row
// when node is empty: the owner of a SQLite database at start) back in the
// queue as they were before the claim, instead of leaving them until the
// lease (Lease) ends. A node that is gone made no attempt it recorded; the
// endpoint may have received one, which at-least-once delivery allows.
func ReleaseClaims(ctx context.Context, tx *store.Tx, node string) (int64, error) {
	q := `UPDATE webhook_deliveries SET due_at = next_attempt_at, claim = NULL WHERE claim IS NOT NULL`
	var args []any
	if node != "" {
		// substr, not LIKE: node ids hold '_', a LIKE wildcard.
		prefix := node + "."
		q += ` AND substr(claim, 1, ?) = ?`
		args = append(args, len(prefix), prefix)
	}
	res, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// findEvent finds a webhook event of the workspace by id. The event log has
// no index on id (dropped to speed up every raise), so it looks first where
// the id is cheap to find within the workspace: the delivery log (which also
// holds the bodies of test events) and the queue, and reads the event log
// only for an event that no endpoint has been sent yet.
func (s *Service) findEvent(ctx context.Context, workspaceID, eventID string) (*storedEvent, error) {
	var ev storedEvent
	var payload sql.NullString
	err := s.db.QueryRow(ctx, `SELECT event, event_seq, payload FROM webhook_attempts WHERE workspace_id = ? AND event_id = ?
		ORDER BY created_at LIMIT 1`, workspaceID, eventID).Scan(&ev.name, &ev.seq, &payload)
	if err == nil && payload.Valid {
		ev.body, ev.keepBody = []byte(payload.String), true
		return &ev, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		err = s.db.QueryRow(ctx, `SELECT event_seq FROM webhook_deliveries WHERE workspace_id = ? AND event_id = ? LIMIT 1`,
			workspaceID, eventID).Scan(&ev.seq)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && !ev.seq.Valid) {
		err = events.WebhookSeq(ctx, s.db, workspaceID, eventID, &ev.seq)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("delivery")
	}
	if err != nil {
		return nil, err
	}
	bodies, err := s.loadEvents(ctx, []any{ev.seq.Int64})
	if err != nil {
		return nil, err
	}
	b, ok := bodies[eventID]
	if !ok {
		return nil, apierr.NotFound("delivery").WithNext("The event is no longer stored.")
	}
	ev.name, ev.body = b.name, b.body
	c := events.Claimed{WorkspaceID: workspaceID}
	if c.MailboxID, c.EmailID, err = events.MailboxOf(ctx, s.db, ev.seq.Int64); err != nil {
		return nil, err
	}
	one := []events.Claimed{c}
	if err := s.attributeEmails(ctx, s.db, one, map[string]bool{workspaceID: true}); err != nil {
		return nil, err
	}
	ev.mailbox = one[0].MailboxID
	return &ev, nil
}

// insertEndpoint stores a new endpoint with its sealed secret.
func insertEndpoint(ctx context.Context, q store.Querier, e *Endpoint, sealedSecret string) error {
	evJSON, _ := json.Marshal(e.Events)
	hJSON, _ := json.Marshal(e.Headers)
	now := store.Millis(e.CreatedAt)
	var mailboxID any // NULL: not scoped to a mailbox
	if e.MailboxID != "" {
		mailboxID = e.MailboxID
	}
	svix := 0
	if e.SvixSignatures {
		svix = 1
	}
	_, err := q.Exec(ctx, `INSERT INTO webhooks (id, workspace_id, url, events, headers, secret, active,
		consecutive_failures, accepted_at, created_at, updated_at, mailbox_id, svix_signatures) VALUES (?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?, ?, ?)`,
		e.ID, e.WorkspaceID, e.URL, string(evJSON), string(hJSON), sealedSecret, now, now, now, mailboxID, svix)
	return err
}

// readEndpoint reads one endpoint of the workspace, or store.ErrNotFound.
func readEndpoint(ctx context.Context, q store.Querier, workspaceID, id string, now time.Time) (*Endpoint, error) {
	return scanEndpoint(q.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhooks WHERE workspace_id = ? AND id = ?`, workspaceID, id), now)
}

// listEndpoints reads the workspace's endpoints, oldest first.
func listEndpoints(ctx context.Context, q store.Querier, workspaceID string, now time.Time) ([]*Endpoint, error) {
	return store.QueryAll(ctx, q, func(sc store.Scanner) (*Endpoint, error) { return scanEndpoint(sc, now) },
		`SELECT `+endpointColumns+` FROM webhooks WHERE workspace_id = ? ORDER BY created_at, id`, workspaceID)
}

// endpointExists tells whether the workspace has the endpoint id.
func endpointExists(ctx context.Context, q store.Querier, workspaceID, id string) (bool, error) {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM webhooks WHERE workspace_id = ? AND id = ?`, workspaceID, id).Scan(&one)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// countHeld counts an endpoint's held deliveries of events since since.
func countHeld(ctx context.Context, q store.Querier, webhookID string, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 AND event_at >= ?`,
		webhookID, store.Millis(since)).Scan(&n)
	return n, err
}

// updateEndpoint applies a PATCH's assignments (each "column = ?" with its
// value in args); false when the workspace has no such endpoint.
func updateEndpoint(ctx context.Context, tx *store.Tx, workspaceID, id string, sets []string, args []any) (bool, error) {
	q := "UPDATE webhooks SET " + strings.Join(sets, ", ") + " WHERE workspace_id = ? AND id = ?"
	res, err := tx.Exec(ctx, q, append(args, workspaceID, id)...)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// deleteEndpoint removes an endpoint and its queued and held deliveries;
// false when the workspace has no such endpoint.
func deleteEndpoint(ctx context.Context, tx *store.Tx, workspaceID, id string) (bool, error) {
	res, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE workspace_id = ? AND id = ?`, workspaceID, id)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	_, err = tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id)
	return true, err
}

// markAccepted records that the endpoint accepted a delivery at t.
func markAccepted(ctx context.Context, tx *store.Tx, id string, t time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE webhooks SET consecutive_failures = 0, last_success_at = ?, accepted_at = ? WHERE id = ?`,
		store.Millis(t), store.Millis(t), id)
	return err
}

// reenable turns a disabled endpoint back on.
func reenable(ctx context.Context, tx *store.Tx, id string, t time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE webhooks SET active = 1, disabled_reason = NULL, disabled_at = NULL, updated_at = ? WHERE id = ?`,
		store.Millis(t), id)
	return err
}

// listAttempts reads a page of the workspace's delivery log, newest first,
// with each row's kind.
func listAttempts(ctx context.Context, q store.Querier, workspaceID string, dq DeliveryQuery) ([]Delivery, []string, error) {
	where := `workspace_id = ?`
	args := []any{workspaceID}
	if dq.WebhookID != "" {
		where = `webhook_id = ? AND workspace_id = ?`
		args = []any{dq.WebhookID, workspaceID}
	} else if dq.BoundTo != "" {
		where += ` AND webhook_id IN (SELECT id FROM webhooks WHERE workspace_id = ? AND mailbox_id = ?)`
		args = append(args, workspaceID, dq.BoundTo)
	}
	if dq.Event != "" {
		where += ` AND event = ?`
		args = append(args, dq.Event)
	}
	if len(dq.EventIDs) > 0 {
		where += ` AND event_id IN (` + store.Placeholders(len(dq.EventIDs)) + `)`
		for _, id := range dq.EventIDs {
			args = append(args, id)
		}
	}
	if dq.AfterID != "" {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, dq.AfterAt, dq.AfterAt, dq.AfterID)
	}
	args = append(args, dq.Limit)
	var kinds []string
	out, err := store.QueryAll(ctx, q, func(sc store.Scanner) (Delivery, error) {
		var d Delivery
		var kind string
		var status sql.NullInt64
		var errText sql.NullString
		var at int64
		if err := sc.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.Event, &kind, &d.Attempt, &status, &d.ResponseBody, &d.DurationMs, &errText, &at); err != nil {
			return d, err
		}
		if status.Valid {
			c := int(status.Int64)
			d.StatusCode = &c
		}
		if errText.Valid {
			d.Error = &errText.String
		}
		d.CreatedAt = store.FromMillis(at)
		kinds = append(kinds, kind)
		return d, nil
	}, `SELECT id, webhook_id, event_id, event, kind, attempt, status_code, response_body, duration_ms, error, created_at
		FROM webhook_attempts WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	return out, kinds, err
}

// readAttempt reads one logged delivery of the workspace, or
// store.ErrNotFound.
func readAttempt(ctx context.Context, q store.Querier, workspaceID, id string) (webhookID, eventID string, eventSeq sql.NullInt64, name string, payload sql.NullString, err error) {
	err = q.QueryRow(ctx, `SELECT webhook_id, event_id, event_seq, event, payload FROM webhook_attempts WHERE workspace_id = ? AND id = ?`,
		workspaceID, id).Scan(&webhookID, &eventID, &eventSeq, &name, &payload)
	return
}

// queueDeliveries inserts n delivery rows (8 values each in args); a row
// already queued for the endpoint and event is left as it is.
func queueDeliveries(ctx context.Context, tx *store.Tx, n int, args []any) (int64, error) {
	q := `INSERT INTO webhook_deliveries (webhook_id, workspace_id, event_id, event_seq, event_at, held, attempts, due_at, next_attempt_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, 0, ?, ?),", n), ",") +
		` ON CONFLICT (webhook_id, event_id) DO NOTHING`
	res, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// deleteDelivered drops the finished rows seqs that claim still holds.
func deleteDelivered(ctx context.Context, tx *store.Tx, claim string, seqs []any) error {
	args, in := store.PaddedIn([]any{claim}, seqs)
	_, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE claim = ? AND seq IN (`+in+`)`, args...)
	return err
}

// retryLater gives a failed row back for its next attempt at next (ms).
func retryLater(ctx context.Context, tx *store.Tx, seq int64, claim string, attempts int, next int64) error {
	_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET attempts = ?, due_at = ?, next_attempt_at = ?, claim = NULL, `+heldIfDisabled+`
		WHERE seq = ? AND claim = ?`, attempts, next, next, seq, claim)
	return err
}

// releaseClaim gives a row back untried.
func releaseClaim(ctx context.Context, tx *store.Tx, seq int64, claim string) error {
	_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET due_at = next_attempt_at, claim = NULL, `+heldIfDisabled+`
		WHERE seq = ? AND claim = ?`, seq, claim)
	return err
}
