package delivery

import (
	"context"
	"slices"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// The delivery engine's one table is outbound_messages: the signed bytes of
// an email still owed a retry, so a retry sends what the first attempt
// signed. The emails row belongs to the sending area (sending.LoadOutgoing,
// sending.LockOutcome, sending.WriteOutcome).

// keepSigned stores an email's signed message for its retries.
func keepSigned(ctx context.Context, tx *store.Tx, emailID, workspaceID string, data []byte, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbound_messages (email_id, workspace_id, data, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (email_id) DO NOTHING`, emailID, workspaceID, data, store.Millis(now))
	return err
}

// dropSigned forgets an email's signed message once it is owed nothing.
func dropSigned(ctx context.Context, tx *store.Tx, emailID string) error {
	_, err := tx.Exec(ctx, `DELETE FROM outbound_messages WHERE email_id = ?`, emailID)
	return err
}

// keptSigned reads the signed message kept for a retry, or
// store.ErrNotFound.
func keptSigned(ctx context.Context, q store.Querier, emailID string) ([]byte, error) {
	var raw []byte
	err := q.QueryRow(ctx, `SELECT data FROM outbound_messages WHERE email_id = ?`, emailID).Scan(&raw)
	return raw, err
}

// The attempts of an email (email_attempts, issue #48): written with the
// outcome they led to, read by GET /v1/emails/{id}/attempts.

// attemptRow is one recipient's attempt as stored.
type attemptRow struct {
	Recipient string
	Attempt   int
	At        time.Time
	Took      time.Duration
	Outcome   string
	Result    outbound.RcptResult
}

// soleRecipient is the recipient an attempt row of e stores empty: e's
// one address, when it has one (its one To, no Cc or Bcc), as a broadcast
// recipient's email does (issue #47: 20 bytes and more of each row and of
// its key). Reads put it back from the email (Attempts, outcomesOf).
func soleRecipient(e *email) string {
	if len(e.To) == 1 && len(e.Cc) == 0 && len(e.Bcc) == 0 {
		return e.To[0]
	}
	return ""
}

// writeAttempts queues the attempts to be inserted with the outcome's
// transaction, just before it commits, together with those of the other
// outcomes sharing the commit (pendingAttempts); a rerun after a crash that
// wrote them finds them there (DO NOTHING).
func writeAttempts(_ context.Context, tx *store.Tx, e *email, rows []attemptRow) error {
	sole := soleRecipient(e)
	if len(rows) == 0 {
		return nil
	}
	p := attemptsOf(tx)
	for _, a := range rows {
		r := a.Result
		reply := truncateReply(r.Message)
		steps, err := encodeSteps(r.Steps, reply)
		if err != nil {
			return err
		}
		rcpt := a.Recipient
		if rcpt == sole {
			rcpt = ""
		}
		p.rows = append(p.rows, e.ID, rcpt, a.Attempt, store.Millis(a.At), a.Took.Milliseconds(), a.Outcome,
			r.Stage, r.Code, r.Enhanced, reply, r.Host, r.RemoteIP, r.Session.SourceIP, r.TLS, r.Session.Cipher,
			store.BoolInt(r.Session.Verified), r.Session.MTASTS, store.BoolInt(r.Session.Reused), string(steps))
	}
	return nil
}

// pendingAttempts are the attempt rows a transaction's outcomes wrote, in
// attemptsHead's columns: inserted as multi-row statements just before the
// commit (one statement per attempt was a third of a delivered email's
// statements). A read of the attempts inside the transaction (outcomesOf)
// takes them into account. Rewindable: a write rolled back to its savepoint
// takes its rows back.
type pendingAttempts struct{ rows []any }

type attemptsKey struct{}

// attemptsOf is tx's pending attempts, registered on first use to be
// written before the commit.
func attemptsOf(tx *store.Tx) *pendingAttempts {
	return tx.Local(attemptsKey{}, func() any {
		p := &pendingAttempts{}
		tx.BeforeFlush(func(ctx context.Context, tx *store.Tx) error {
			rows := p.rows
			p.rows = nil
			return tx.ExecValues(ctx, attemptsInsert, attemptCols, rows, attemptsTail)
		})
		return p
	}).(*pendingAttempts)
}

func (p *pendingAttempts) Mark() int      { return len(p.rows) }
func (p *pendingAttempts) Rewind(pos int) { p.rows = p.rows[:pos] }

// each calls f with the pending rows of email id: recipient, attempt,
// outcome, stage, code, enhanced, reply, as outcomesOf reads them.
func (p *pendingAttempts) each(id string, f func(rcpt string, attempt int, outcome, stage string, code int, enhanced, reply string)) {
	for i := 0; i+attemptCols <= len(p.rows); i += attemptCols {
		r := p.rows[i : i+attemptCols]
		if r[0].(string) == id {
			f(r[1].(string), r[2].(int), r[5].(string), r[6].(string), r[7].(int), r[8].(string), r[9].(string))
		}
	}
}

// The attempts' INSERT, in parts.
const (
	attemptCols    = 19
	attemptsInsert = `INSERT INTO email_attempts (email_id, recipient, attempt, created_at, duration_ms, outcome,
		stage, code, enhanced, reply, mx, remote_ip, source_ip, tls_version, tls_cipher, tls_verified, mta_sts, reused, steps)`
	attemptsTail = ` ON CONFLICT (email_id, recipient, attempt) DO NOTHING`
)

// Attempt is one recipient's delivery attempt with its session and replies.
type Attempt struct {
	Recipient  string
	Attempt    int
	At         time.Time
	DurationMs int64
	Outcome    string
	Stage      string
	Code       int
	Enhanced   string
	Reply      string
	MX         string
	RemoteIP   string
	SourceIP   string
	TLS        string
	Cipher     string
	Verified   bool
	MTASTS     string
	Reused     bool
	Steps      []outbound.Step
}

// Attempts reads an email's attempts, oldest first. The caller has already
// read the email under its grant (sending.Get), so the workspace is the
// only check left here: an attempt's is its email's (00120 stores none).
func (s *Service) Attempts(ctx context.Context, workspaceID, emailID string) ([]Attempt, error) {
	owner, err := sending.Senders(ctx, s.db, []string{emailID})
	if err != nil {
		return nil, err
	}
	if owner[emailID].WorkspaceID != workspaceID {
		return nil, nil
	}
	out, err := store.QueryAll(ctx, s.db, func(sc store.Scanner) (Attempt, error) {
		var a Attempt
		var at int64
		var verified, reused int
		var steps string
		err := sc.Scan(&a.Recipient, &a.Attempt, &at, &a.DurationMs, &a.Outcome, &a.Stage, &a.Code, &a.Enhanced, &a.Reply,
			&a.MX, &a.RemoteIP, &a.SourceIP, &a.TLS, &a.Cipher, &verified, &a.MTASTS, &reused, &steps)
		if err != nil {
			return a, err
		}
		a.At, a.Verified, a.Reused = store.FromMillis(at), verified == 1, reused == 1
		a.Steps, err = decodeSteps(steps, a.Reply)
		return a, err
	}, `SELECT recipient, attempt, created_at, duration_ms, outcome, stage, code, enhanced, reply, mx, remote_ip, source_ip,
		tls_version, tls_cipher, tls_verified, mta_sts, reused, steps
		FROM email_attempts WHERE email_id = ? ORDER BY created_at, recipient, attempt`, emailID)
	if err != nil || !slices.ContainsFunc(out, func(a Attempt) bool { return a.Recipient == "" }) {
		return out, err
	}
	e, err := loadEmail(ctx, s.db, emailID)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Recipient == "" {
			out[i].Recipient = soleRecipient(e)
		}
	}
	return out, nil
}

// PurgeAttempts removes up to limit attempts older than before (retention,
// with the events they tell the same story as). An attempt is never older
// than its email, whose id begins with its creation time: the email ids
// below ids.Floor("em", before) bound the range of the key that is read,
// so no index on created_at is kept for this (00120). An attempt made after
// before, of an email created earlier (a scheduled send), waits for a later
// pass.
func PurgeAttempts(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error) {
	res, err := db.Exec(ctx, `DELETE FROM email_attempts WHERE (email_id, recipient, attempt) IN
		(SELECT email_id, recipient, attempt FROM email_attempts WHERE email_id < ? AND created_at < ? ORDER BY email_id LIMIT ?)`,
		ids.Floor("em", before), store.Millis(before), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// outcomesOf rebuilds the outcomes of email id's delivered addresses from
// their last attempt rows. An address whose attempts retention has purged
// (MAILROOM_RETAIN_EVENTS, with the email's timeline) is known only as
// delivered.
func outcomesOf(ctx context.Context, q store.Querier, id string, addrs []string) ([]Recipient, error) {
	last := map[string]Recipient{}
	note := func(rcpt string, attempt int, outcome, stage string, code int, enhanced, reply string) {
		if rcpt == "" && len(addrs) == 1 {
			rcpt = addrs[0] // the email's one address (soleRecipient)
		}
		if r, ok := last[rcpt]; !ok || attempt > r.Attempts {
			last[rcpt] = outcomeOf(rcpt, attempt, outcome, stage, code, enhanced, reply)
		}
	}
	rows, err := q.Query(ctx, `SELECT recipient, attempt, outcome, stage, code, enhanced, reply FROM email_attempts WHERE email_id = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var rcpt, outcome, stage, enhanced, reply string
		var attempt, code int
		if err := rows.Scan(&rcpt, &attempt, &outcome, &stage, &code, &enhanced, &reply); err != nil {
			return nil, err
		}
		note(rcpt, attempt, outcome, stage, code, enhanced, reply)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if tx, ok := q.(*store.Tx); ok {
		attemptsOf(tx).each(id, note) // written in this transaction, not yet inserted
	}
	out := make([]Recipient, len(addrs))
	for i, a := range addrs {
		r, ok := last[a]
		if !ok {
			r = Recipient{Email: a, Status: RcptDelivered}
		}
		out[i] = r
	}
	return out, nil
}
