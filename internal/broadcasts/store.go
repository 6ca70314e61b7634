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

// recipientRows reads the recipients ids of one workspace with one query
// per broadcast (a delivery batch's: one); those not found are left out.
func recipientRows(ctx context.Context, q store.Querier, workspaceID string, ids []string) ([]handedRow, error) {
	contacts := map[string][]string{} // broadcast -> contacts
	for _, id := range ids {
		if b, c, ok := splitRecipientID(id); ok {
			contacts[b] = append(contacts[b], c)
		}
	}
	var out []handedRow
	for b, cs := range contacts {
		args, in := store.PaddedIn([]any{b, workspaceID}, cs)
		rows, err := store.QueryAll(ctx, q, func(sc store.Scanner) (handedRow, error) {
			r := handedRow{broadcastID: b}
			var a, ma string
			err := sc.Scan(&r.ContactID, &r.Email, &r.First, &r.Last, &a, &ma)
			r.ID, r.Attrs, r.MemberAttrs = recipientID(b, r.ContactID), decodeMap(a), decodeMap(ma)
			return r, err
		}, `SELECT contact_id, email, first_name, last_name, attributes, member_attributes FROM broadcast_recipients
			WHERE broadcast_id = ? AND EXISTS (SELECT 1 FROM broadcasts b WHERE b.id = broadcast_recipients.broadcast_id AND b.workspace_id = ?)
			AND contact_id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// handedRow is a recipient row with its broadcast's id.
type handedRow struct {
	pendingRow
	broadcastID string
}

// A recipient's id is its broadcast's id and its contact's, joined by an
// underscore; the table keys the two and stores no id (00097).
func recipientID(broadcastID, contactID string) string { return broadcastID + "_" + contactID }

// splitRecipientID is recipientID undone: a broadcast id is bc_ and a
// ULID, the next underscore ends it.
func splitRecipientID(id string) (broadcastID, contactID string, ok bool) {
	if !strings.HasPrefix(id, "bc_") {
		return "", "", false
	}
	i := strings.IndexByte(id[3:], '_')
	if i < 0 {
		return "", "", false
	}
	return id[:3+i], id[3+i+1:], true
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
// row per address (a contact's address is unique in its workspace, so one
// per contact is one per address).
func snapshot(ctx context.Context, tx *store.Tx, b Broadcast, sel contacts.PeopleQuery, now time.Time) error {
	q := store.Cat(`INSERT INTO broadcast_recipients (broadcast_id, contact_id, email, first_name, last_name, attributes, member_attributes,
		status, reason, email_id, created_at, updated_at)
		SELECT `, store.Val(b.ID), `, p.contact_id, p.email,
		p.first_name, p.last_name, p.attributes, p.member_attributes,
		CASE WHEN p.reason = '' THEN 'pending' ELSE 'skipped' END, p.reason, '', `, store.Val(store.Millis(now)), `, `, store.Val(store.Millis(now)), `
		FROM (`, sel.Snapshot(), `) p WHERE 1=1 ON CONFLICT (broadcast_id, contact_id) DO NOTHING`)
	_, err := tx.Exec(ctx, q.SQL, q.Args...)
	return err
}

// pendingRow is a recipient still to hand over, with its merge fields.
type pendingRow struct {
	ID, ContactID, Email, First, Last string
	Attrs, MemberAttrs                map[string]string
}

// pendingBatch is the first limit recipients still pending after contact
// id after ("" for the first batch). The fan-out passes the last contact of
// the batch it handed over: the read then seeks past the recipients
// already handed over instead of stepping over them (SQLite walks the
// primary key, not the partial index of pending rows, and each batch
// re-read every row before it: at 100,000 recipients a batch near the end
// stepped over 90,000 rows, 360,000 VM steps instead of 1,600).
func pendingBatch(ctx context.Context, q store.Querier, broadcastID, after string, limit int) ([]pendingRow, error) {
	return store.QueryAll(ctx, q, func(sc store.Scanner) (pendingRow, error) {
		var r pendingRow
		var a, ma string
		err := sc.Scan(&r.ContactID, &r.Email, &r.First, &r.Last, &a, &ma)
		r.ID, r.Attrs, r.MemberAttrs = recipientID(broadcastID, r.ContactID), decodeMap(a), decodeMap(ma)
		return r, err
	}, pendingBatchSQL, broadcastID, after, limit)
}

const pendingBatchSQL = `SELECT contact_id, email, first_name, last_name, attributes, member_attributes FROM broadcast_recipients
		WHERE broadcast_id = ? AND status = 'pending' AND contact_id > ? ORDER BY contact_id LIMIT ?`

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
	args := make([]any, 0, 1+3*n)
	args = append(args, store.Millis(now))
	for i := range n {
		j := min(i, len(ids)-1)
		broadcastID, contactID, _ := splitRecipientID(ids[j])
		args = append(args, broadcastID, contactID, emailIDs[j])
	}
	// Both dialects name a VALUES list's columns column1, column2, column3.
	_, err := tx.Exec(ctx, `UPDATE broadcast_recipients SET status = 'sent', email_id = v.column3, updated_at = ?
		FROM (VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ")+`) AS v
		WHERE broadcast_recipients.broadcast_id = v.column1 AND broadcast_recipients.contact_id = v.column2
		AND broadcast_recipients.status = 'pending'`, args...)
	return err
}

func markSkipped(ctx context.Context, tx *store.Tx, id, reason string, now time.Time) error {
	broadcastID, contactID, _ := splitRecipientID(id)
	_, err := tx.Exec(ctx, `UPDATE broadcast_recipients SET status = 'skipped', reason = ?, updated_at = ?
		WHERE broadcast_id = ? AND contact_id = ? AND status = 'pending'`, reason, store.Millis(now), broadcastID, contactID)
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
	var contactID string
	_, fromContact, _ := splitRecipientID(from)
	err := q.QueryRow(ctx, `SELECT r.contact_id FROM broadcast_recipients r WHERE r.broadcast_id = ? AND r.contact_id >= ? AND r.status = 'sent'
		AND COALESCE(`+sending.StatusOfSQL("r.email_id")+`, '') NOT IN ('delivered', 'bounced', 'complained', 'failed', 'cancelled')
		ORDER BY r.contact_id LIMIT 1`, broadcastID, fromContact).Scan(&contactID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return recipientID(broadcastID, contactID), err
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
		// Within one broadcast, id order is contact_id order.
		if b, c, ok := splitRecipientID(after); ok && b == broadcastID {
			where += ` AND r.contact_id > ?`
			args = append(args, c)
		} else {
			where += ` AND r.broadcast_id || '_' || r.contact_id > ?`
			args = append(args, after)
		}
		offset = 0
	}
	inner := `SELECT r.contact_id, r.email, ` + effective + ` AS st, r.reason, r.email_id, r.created_at, r.updated_at FROM broadcast_recipients r` + where
	outer := `SELECT * FROM (` + inner + `) x`
	if status != "" {
		outer += ` WHERE x.st = ?`
		args = append(args, status)
	}
	outer += ` ORDER BY x.contact_id LIMIT ? OFFSET ?`
	args = append(args, limit, offset)
	return store.QueryAll(ctx, q, func(sc store.Scanner) (Recipient, error) {
		var r Recipient
		var c, u int64
		err := sc.Scan(&r.ContactID, &r.Email, &r.Status, &r.Reason, &r.EmailID, &c, &u)
		r.ID, r.CreatedAt, r.UpdatedAt = recipientID(broadcastID, r.ContactID), store.FromMillis(c), store.FromMillis(u)
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
