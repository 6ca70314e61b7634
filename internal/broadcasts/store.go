package broadcasts

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/contacts"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// This file holds every statement on the broadcasts and
// broadcast_recipients tables.

const columns = `id, workspace_id, name, from_addr, reply_to, subject, html, text_body, audience_id, segment_id, topic_id, template_id,
	track_opens, track_clicks, status, scheduled_at, started_at, finished_at, cancelled_at, created_at, updated_at, template_version_id,
	unsubscribe_footer`

func scanBroadcast(sc store.Scanner) (Broadcast, error) {
	var b Broadcast
	var opens, clicks, footer int
	var sched, started, finished, cancelled sql.NullInt64
	var created, updated int64
	var st string
	err := sc.Scan(&b.ID, &b.WorkspaceID, &b.Name, &b.From, &b.ReplyTo, &b.Subject, &b.HTML, &b.Text, &b.AudienceID, &b.SegmentID, &b.TopicID, &b.TemplateID,
		&opens, &clicks, &st, &sched, &started, &finished, &cancelled, &created, &updated, &b.TemplateVersionID, &footer)
	if err != nil {
		return b, err
	}
	b.Status, b.TrackOpens, b.TrackClicks, b.Footer = Status(st), opens != 0, clicks != 0, footer != 0
	b.ScheduledAt, b.StartedAt, b.FinishedAt, b.CancelledAt = store.NullMillis(sched), store.NullMillis(started), store.NullMillis(finished), store.NullMillis(cancelled)
	b.CreatedAt, b.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return b, nil
}

func insertBroadcast(ctx context.Context, q store.Querier, b Broadcast) error {
	_, err := q.Exec(ctx, `INSERT INTO broadcasts (`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.WorkspaceID, b.Name, b.From, b.ReplyTo, b.Subject, b.HTML, b.Text, b.AudienceID, b.SegmentID, b.TopicID, b.TemplateID,
		store.BoolInt(b.TrackOpens), store.BoolInt(b.TrackClicks), string(b.Status), store.MillisOrNull(b.ScheduledAt), store.MillisOrNull(b.StartedAt), store.MillisOrNull(b.FinishedAt),
		store.MillisOrNull(b.CancelledAt), store.Millis(b.CreatedAt), store.Millis(b.UpdatedAt), b.TemplateVersionID, store.BoolInt(b.Footer))
	return err
}

func updateBroadcast(ctx context.Context, q store.Querier, b Broadcast) error {
	_, err := q.Exec(ctx, `UPDATE broadcasts SET name = ?, reply_to = ?, subject = ?, html = ?, text_body = ?, audience_id = ?, segment_id = ?, topic_id = ?,
		template_id = ?, track_opens = ?, track_clicks = ?, status = ?, scheduled_at = ?, started_at = ?, finished_at = ?, cancelled_at = ?, updated_at = ?,
		template_version_id = ?, unsubscribe_footer = ?
		WHERE id = ? AND workspace_id = ?`,
		b.Name, b.ReplyTo, b.Subject, b.HTML, b.Text, b.AudienceID, b.SegmentID, b.TopicID, b.TemplateID, store.BoolInt(b.TrackOpens), store.BoolInt(b.TrackClicks),
		string(b.Status), store.MillisOrNull(b.ScheduledAt), store.MillisOrNull(b.StartedAt), store.MillisOrNull(b.FinishedAt), store.MillisOrNull(b.CancelledAt), store.Millis(b.UpdatedAt),
		b.TemplateVersionID, store.BoolInt(b.Footer), b.ID, b.WorkspaceID)
	return err
}

// pinRendering records the template version ("" for none) and the
// fallbacks the fan-out renders with, each unless recorded already.
func pinRendering(ctx context.Context, q store.Querier, workspaceID, id, versionID string, fallbacks map[string]string) error {
	fb, err := json.Marshal(fallbacks)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `UPDATE broadcasts SET template_version_id = CASE WHEN template_version_id = '' THEN ? ELSE template_version_id END,
		render_fallbacks = COALESCE(render_fallbacks, ?) WHERE id = ? AND workspace_id = ?`, versionID, string(fb), id, workspaceID)
	return err
}

// pinnedFallbacks reads the fallbacks a broadcast pinned (pinRendering),
// or nil before it began sending.
func pinnedFallbacks(ctx context.Context, q store.Querier, workspaceID, id string) (map[string]string, error) {
	var fb sql.NullString
	err := q.QueryRow(ctx, `SELECT render_fallbacks FROM broadcasts WHERE id = ? AND workspace_id = ?`, id, workspaceID).Scan(&fb)
	if errors.Is(err, store.ErrNotFound) || !fb.Valid {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	return m, json.Unmarshal([]byte(fb.String), &m)
}

// recipientRow reads a recipient handed over (Body renders its message),
// with its broadcast's id.
func recipientRow(ctx context.Context, q store.Querier, workspaceID, id string) (pendingRow, string, error) {
	r, err := scanRecipient(q.QueryRow(ctx, `SELECT `+recipientColumns+` FROM broadcast_recipients
		WHERE id = ? AND workspace_id = ?`, id, workspaceID))
	return r.pendingRow, r.broadcastID, err
}

// recipientRows reads the recipients ids of one workspace in one query (a
// delivery batch's); those not found are left out.
func recipientRows(ctx context.Context, q store.Querier, workspaceID string, ids []string) ([]handedRow, error) {
	args, in := store.PaddedIn([]any{workspaceID}, ids)
	return store.QueryAll(ctx, q, scanRecipient, `SELECT `+recipientColumns+` FROM broadcast_recipients
		WHERE workspace_id = ? AND id IN (`+in+`)`, args...)
}

const recipientColumns = `id, contact_id, email, first_name, last_name, attributes, member_attributes, broadcast_id`

// handedRow is a recipient row with its broadcast's id.
type handedRow struct {
	pendingRow
	broadcastID string
}

func scanRecipient(sc store.Scanner) (handedRow, error) {
	var r handedRow
	var a, ma string
	err := sc.Scan(&r.ID, &r.ContactID, &r.Email, &r.First, &r.Last, &a, &ma, &r.broadcastID)
	r.Attrs, r.MemberAttrs = decodeMap(a), decodeMap(ma)
	return r, err
}

func broadcastByID(ctx context.Context, q store.Querier, workspaceID, id string) (Broadcast, error) {
	return scanBroadcast(q.QueryRow(ctx, `SELECT `+columns+` FROM broadcasts WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

// lockBroadcast reads the row holding its lock until tx ends, so that a
// batch and a cancel never both commit on a stale status.
func lockBroadcast(ctx context.Context, tx *store.Tx, workspaceID, id string) (Broadcast, error) {
	return scanBroadcast(tx.QueryRow(ctx, `SELECT `+columns+` FROM broadcasts WHERE id = ? AND workspace_id = ?`+tx.ForUpdate(), id, workspaceID))
}

func listBroadcasts(ctx context.Context, q store.Querier, workspaceID string, limit int, before *Position) ([]Broadcast, error) {
	if before != nil {
		return store.QueryAll(ctx, q, scanBroadcast, `SELECT `+columns+` FROM broadcasts WHERE workspace_id = ? AND (created_at < ? OR (created_at = ? AND id < ?))
			ORDER BY created_at DESC, id DESC LIMIT ?`, workspaceID, before.At, before.At, before.ID, limit)
	}
	return store.QueryAll(ctx, q, scanBroadcast, `SELECT `+columns+` FROM broadcasts WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, workspaceID, limit)
}

func deleteDraft(ctx context.Context, q store.Querier, workspaceID, id string) error {
	_, err := q.Exec(ctx, `DELETE FROM broadcasts WHERE id = ? AND workspace_id = ? AND status = 'draft'`, id, workspaceID)
	return err
}

// snapshot copies the selection into the broadcast's recipients: people
// mail may reach as pending, the others as skipped with the reason; one
// row per address.
func snapshot(ctx context.Context, tx *store.Tx, b Broadcast, sel contacts.PeopleQuery, now time.Time) error {
	q := store.Cat(`INSERT INTO broadcast_recipients (id, broadcast_id, workspace_id, contact_id, email, first_name, last_name, attributes, member_attributes,
		status, reason, email_id, created_at, updated_at)
		SELECT CAST(`, store.Val(b.ID+"_"), ` AS TEXT) || p.contact_id, `, store.Val(b.ID), `, `, store.Val(b.WorkspaceID), `, p.contact_id, p.email,
		p.first_name, p.last_name, p.attributes, p.member_attributes,
		CASE WHEN p.reason = '' THEN 'pending' ELSE 'skipped' END, p.reason, '', `, store.Val(store.Millis(now)), `, `, store.Val(store.Millis(now)), `
		FROM (`, sel.Snapshot(), `) p WHERE 1=1 ON CONFLICT (broadcast_id, email) DO NOTHING`)
	_, err := tx.Exec(ctx, q.SQL, q.Args...)
	return err
}

// pendingRow is a recipient still to hand over, with its merge fields.
type pendingRow struct {
	ID, ContactID, Email, First, Last string
	Attrs, MemberAttrs                map[string]string
}

func decodeMap(s string) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

func pendingBatch(ctx context.Context, q store.Querier, broadcastID string, limit int) ([]pendingRow, error) {
	return store.QueryAll(ctx, q, func(sc store.Scanner) (pendingRow, error) {
		var r pendingRow
		var a, ma string
		err := sc.Scan(&r.ID, &r.ContactID, &r.Email, &r.First, &r.Last, &a, &ma)
		r.Attrs, r.MemberAttrs = decodeMap(a), decodeMap(ma)
		return r, err
	}, `SELECT id, contact_id, email, first_name, last_name, attributes, member_attributes FROM broadcast_recipients
		WHERE broadcast_id = ? AND status = 'pending' ORDER BY id LIMIT ?`, broadcastID, limit)
}

// markSent records that recipients' emails (emailIDs[i] for ids[i]) were
// handed to delivery, in one statement: one UPDATE per recipient was a
// fifth of a fan-out batch's time on SQLite's one writer. It changes only
// rows still pending.
func markSent(ctx context.Context, tx *store.Tx, ids, emailIDs []string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	// Padded to a power of two by repeating the last pair, which updates
	// that row once all the same, so that the statement takes few forms (as
	// store.PaddedIn, for the bounded statement caches).
	n := 1
	for n < len(ids) {
		n *= 2
	}
	args := make([]any, 0, 1+2*n)
	args = append(args, store.Millis(now))
	for i := range n {
		j := min(i, len(ids)-1)
		args = append(args, ids[j], emailIDs[j])
	}
	// Both dialects name a VALUES list's columns column1, column2.
	_, err := tx.Exec(ctx, `UPDATE broadcast_recipients SET status = 'sent', email_id = v.column2, updated_at = ?
		FROM (VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ")+`) AS v
		WHERE broadcast_recipients.id = v.column1 AND broadcast_recipients.status = 'pending'`, args...)
	return err
}

func markSkipped(ctx context.Context, tx *store.Tx, id, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE broadcast_recipients SET status = 'skipped', reason = ?, updated_at = ? WHERE id = ? AND status = 'pending'`,
		reason, store.Millis(now), id)
	return err
}

// skipPending marks every recipient still pending as skipped (a cancel).
func skipPending(ctx context.Context, tx *store.Tx, broadcastID, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE broadcast_recipients SET status = 'skipped', reason = ?, updated_at = ? WHERE broadcast_id = ? AND status = 'pending'`,
		reason, store.Millis(now), broadcastID)
	return err
}

// effective is a recipient's status: its own until handed over, then its
// email's outcome.
var effective = `CASE WHEN r.status <> 'sent' THEN r.status ELSE
	CASE ` + sending.StatusOfSQL("r.email_id") + `
		WHEN 'delivered' THEN 'delivered' WHEN 'bounced' THEN 'bounced' WHEN 'complained' THEN 'complained'
		WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'skipped' ELSE 'sent' END END`

// firstInFlight is the first recipient, from id from on, handed over but
// whose email has no final status yet ("" when there is none): what the
// status column's CASE (effective) still calls sent.
func firstInFlight(ctx context.Context, q store.Querier, broadcastID, from string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT r.id FROM broadcast_recipients r WHERE r.broadcast_id = ? AND r.status = 'sent' AND r.id >= ?
		AND COALESCE(`+sending.StatusOfSQL("r.email_id")+`, '') NOT IN ('delivered', 'bounced', 'complained', 'failed', 'cancelled')
		ORDER BY r.id LIMIT 1`, broadcastID, from).Scan(&id)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return id, err
}

// recipientEmailIDs selects the ids of a broadcast's emails (parameter:
// the broadcast id), for tracking.EngagementOf.
const recipientEmailIDs = `SELECT email_id FROM broadcast_recipients WHERE broadcast_id = ? AND email_id <> ''`

func recipientStats(ctx context.Context, q store.Querier, broadcastID string) (Stats, error) {
	var s Stats
	rows, err := store.QueryAll(ctx, q, func(sc store.Scanner) (struct {
		st string
		n  int
	}, error) {
		var v struct {
			st string
			n  int
		}
		return v, sc.Scan(&v.st, &v.n)
	}, `SELECT st, COUNT(*) FROM (SELECT `+effective+` AS st FROM broadcast_recipients r WHERE r.broadcast_id = ?) x GROUP BY st`, broadcastID)
	if err != nil {
		return s, fmt.Errorf("counting recipients: %w", err)
	}
	for _, r := range rows {
		s.Total += r.n
		switch r.st {
		case RcptPending:
			s.Pending = r.n
		case RcptSent:
			s.Sent = r.n
		case RcptDelivered:
			s.Delivered = r.n
		case RcptBounced:
			s.Bounced = r.n
		case RcptComplained:
			s.Complained = r.n
		case RcptFailed:
			s.Failed = r.n
		case RcptSkipped:
			s.Skipped = r.n
		}
	}
	return s, nil
}

func listRecipients(ctx context.Context, q store.Querier, broadcastID, status string, limit, offset int, after string) ([]Recipient, error) {
	where := ` WHERE r.broadcast_id = ?`
	args := []any{broadcastID}
	if after != "" {
		where += ` AND r.id > ?`
		args = append(args, after)
		offset = 0
	}
	inner := `SELECT r.id, r.contact_id, r.email, ` + effective + ` AS st, r.reason, r.email_id, r.created_at, r.updated_at FROM broadcast_recipients r` + where
	outer := `SELECT * FROM (` + inner + `) x`
	if status != "" {
		outer += ` WHERE x.st = ?`
		args = append(args, status)
	}
	outer += ` ORDER BY x.id LIMIT ? OFFSET ?`
	args = append(args, limit, offset)
	return store.QueryAll(ctx, q, func(sc store.Scanner) (Recipient, error) {
		var r Recipient
		var c, u int64
		err := sc.Scan(&r.ID, &r.ContactID, &r.Email, &r.Status, &r.Reason, &r.EmailID, &c, &u)
		r.CreatedAt, r.UpdatedAt = store.FromMillis(c), store.FromMillis(u)
		return r, err
	}, outer, args...)
}

func countRecipients(ctx context.Context, q store.Querier, broadcastID string) (pending, skipped int, err error) {
	err = q.QueryRow(ctx, `SELECT COALESCE(SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), 0), COALESCE(SUM(CASE WHEN status = 'skipped' THEN 1 ELSE 0 END), 0)
		FROM broadcast_recipients WHERE broadcast_id = ?`, broadcastID).Scan(&pending, &skipped)
	return
}

// handedOver are the email ids of the recipients already handed to delivery.
func handedOver(ctx context.Context, tx *store.Tx, broadcastID string) ([]string, error) {
	return store.QueryAll(ctx, tx, func(sc store.Scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}, `SELECT email_id FROM broadcast_recipients WHERE broadcast_id = ? AND status = 'sent'`, broadcastID)
}

// unsend marks the recipients whose emails a cancel stopped as skipped.
func unsend(ctx context.Context, tx *store.Tx, broadcastID string, emailIDs []string, now time.Time) error {
	for len(emailIDs) > 0 {
		chunk := emailIDs[:min(len(emailIDs), 500)]
		emailIDs = emailIDs[len(chunk):]
		args := []any{store.Millis(now), broadcastID}
		for _, id := range chunk {
			args = append(args, id)
		}
		if _, err := tx.Exec(ctx, `UPDATE broadcast_recipients SET status = 'skipped', reason = 'cancelled', updated_at = ?
			WHERE broadcast_id = ? AND email_id IN (`+store.Placeholders(len(chunk))+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}
