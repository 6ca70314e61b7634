package broadcasts

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/apierr"
	"mailroom/internal/jobs"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// Worker runs jobs.BroadcastArgs: the fan-out of one broadcast. It is
// safe to run again after a crash: every batch commits its emails and its
// recipients' 'sent' status together, so a rerun starts from the
// recipients still pending and repeats nothing that committed.
type Worker struct {
	river.WorkerDefaults[jobs.BroadcastArgs]
	Service *Service
}

// Timeout lets a fan-out run as long as its delivery does (it ends when
// every handed-over email is final); a rerun continues where it stopped.
func (w *Worker) Timeout(*river.Job[jobs.BroadcastArgs]) time.Duration { return time.Hour }

// Work fans the broadcast out.
func (w *Worker) Work(ctx context.Context, job *river.Job[jobs.BroadcastArgs]) error {
	return w.Service.FanOut(ctx, job.Args.WorkspaceID, job.Args.BroadcastID)
}

var errStopped = errors.New("broadcast no longer sending")

// FanOut renders and hands over the broadcast's pending recipients batch
// by batch until none is left (then the broadcast is sent) or it is
// cancelled. A scheduled broadcast snapshots its recipients first.
func (s *Service) FanOut(ctx context.Context, workspaceID, id string) error {
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return nil // deleted
		}
		return err
	}
	if b.Status == StatusScheduled {
		if b, err = s.start(ctx, b); err != nil {
			return err
		}
	}
	if b.Status != StatusSending {
		return nil
	}
	r, err := s.sendRenderer(ctx, b)
	if err != nil {
		return err
	}
	// Before the first hand-over: a run again after a crash, and every
	// render at delivery or on read, uses this version and these
	// fallbacks, whatever is published or declared by then.
	version := ""
	if r.pub != nil {
		version = r.pub.VersionID()
	}
	if err := pinRendering(ctx, s.c.DB, b.WorkspaceID, b.ID, version, r.fallbacks); err != nil {
		return err
	}
	// Every recipient of a batch leaves pending in its hand-over (sent or
	// skipped) or the fan-out stops, so the next batch starts after the
	// last one's last contact; a run again after a crash starts over at
	// the first recipient still pending.
	after := ""
	for {
		batch, err := pendingBatch(ctx, s.c.DB, b.ID, after, BatchSize)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return s.finish(ctx, b)
		}
		after = batch[len(batch)-1].ContactID
		if err := ctx.Err(); err != nil {
			return err
		}
		began := time.Now()
		if err := s.handOver(ctx, b, r, batch); err != nil {
			if errors.Is(err, errStopped) {
				return nil
			}
			return err
		}
		// Rest as long as the hand-over took: a fan-out then holds SQLite's
		// one writer at most half the time, and delivery's commits get the
		// rest. Back to back, it wrote its batches four times faster than
		// delivery sends them and held the writer 95% of the time, while
		// every delivery waited for its commit: the rate at the sink
		// halved until the fan-out ended (bench/broadcast).
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Since(began)):
		}
	}
}

// start moves a scheduled broadcast to sending and snapshots it.
func (s *Service) start(ctx context.Context, b Broadcast) (Broadcast, error) {
	sel, err := s.selection(ctx, b)
	if err != nil {
		return b, err
	}
	err = s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		cur, err := lockBroadcast(ctx, tx, b.WorkspaceID, b.ID)
		if err != nil {
			return err
		}
		b = cur
		if b.Status != StatusScheduled {
			return nil
		}
		now := s.c.Clock.Now()
		b.Status, b.StartedAt, b.UpdatedAt = StatusSending, &now, now
		if err := snapshot(ctx, tx, b, sel, now); err != nil {
			return err
		}
		return updateBroadcast(ctx, tx, b)
	})
	return b, err
}

// finish waits until every handed-over email is final (delivered, bounced,
// failed, cancelled), so that a cancel can still stop what delivery has
// not taken up, then marks the broadcast sent.
func (s *Service) finish(ctx context.Context, b Broadcast) error {
	// A final email stays final, so each look starts at the first
	// recipient still in flight at the last one: the wait reads each
	// recipient about once, not all of them every half second (profiled,
	// recounting the stats this way took 7% of a 3,000-member broadcast's
	// CPU, and grew with the square of its size).
	from := ""
	for {
		id, err := firstInFlight(ctx, s.c.DB, b.ID, from)
		if err != nil {
			return err
		}
		if id == "" {
			break
		}
		from = id
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		cur, err := lockBroadcast(ctx, tx, b.WorkspaceID, b.ID)
		if err != nil || cur.Status != StatusSending {
			return err
		}
		now := s.c.Clock.Now()
		cur.Status, cur.FinishedAt, cur.UpdatedAt = StatusSent, &now, now
		return updateBroadcast(ctx, tx, cur)
	})
}

// handOver renders a batch and, in one transaction that first checks the
// broadcast is still sending, stores its emails on the marketing lane and
// marks its recipients sent. An email stores its subject but not its body:
// delivery renders that from the recipient's row (Body), as of the email's
// creation; the subject's render here, with its checks (required template
// variables, the work limit), finds who cannot be rendered.
func (s *Service) handOver(ctx context.Context, b Broadcast, r *renderer, batch []pendingRow) error {
	type skip struct{ id, reason string }
	var msgs []sending.MarketingEmail
	var sent []pendingRow
	var skips []skip
	var replyTo []string
	if b.ReplyTo != "" {
		replyTo = []string{b.ReplyTo}
	}
	now := s.c.Clock.Now()
	subjectLinks := r.subjectShowsLinks()
	for _, p := range batch {
		v := p.vars()
		if subjectLinks {
			s.personalLinks(b, v, p.Email, now)
		}
		subject, err := r.subject(v)
		if err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				return err
			}
			skips = append(skips, skip{p.ID, "could not render: " + ae.Message})
			continue
		}
		msgs = append(msgs, sending.MarketingEmail{From: b.From, ReplyTo: replyTo, To: p.Email, Subject: subject, BodySource: p.ID,
			Tags: map[string]string{"broadcast_id": b.ID}, TrackOpens: b.TrackOpens, TrackClicks: b.TrackClicks})
		sent = append(sent, p)
	}
	return s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		cur, err := lockBroadcast(ctx, tx, b.WorkspaceID, b.ID)
		if err != nil {
			return err
		}
		if cur.Status != StatusSending {
			return errStopped
		}
		ids, err := s.c.Sending.AcceptMarketing(ctx, tx, b.WorkspaceID, msgs, now)
		if err != nil {
			return err
		}
		rids := make([]string, len(sent))
		for i, p := range sent {
			rids[i] = p.ID
		}
		if err := markSent(ctx, tx, rids, ids, now); err != nil {
			return err
		}
		for _, k := range skips {
			if err := markSkipped(ctx, tx, k.id, k.reason, now); err != nil {
				return err
			}
		}
		return nil
	})
}
