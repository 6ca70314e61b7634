package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/groupcommit"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// newRecorder builds the group committer that writes the pool's outcomes:
// the workers hand each one over without waiting (Go) and a batch of up to
// flushBatch is written in one transaction (writeOutcomes), so bookkeeping
// costs a few statements per batch rather than per delivery. An outcome
// waits up to flushInterval for company. A batch that fails is written
// again outcome by outcome (groupcommit.RetryAlone); an outcome that still
// fails leaves its row leased, due again when the lease ends.
func newRecorder(s *Service, reg prometheus.Registerer) *groupcommit.Committer[outcome] {
	return groupcommit.New(groupcommit.Config[outcome]{
		Name: "webhooks", DB: s.db, Log: s.log, Isolation: groupcommit.RetryAlone,
		MaxBatch: flushBatch, Gather: flushBatch, GatherWait: flushInterval,
		Hooks:    groupcommit.Hooks[outcome]{Wrap: s.recordBatch},
		Registry: reg,
	})
}

// recordBatch writes the outcomes of a batch (its writes carry no work of
// their own).
func (s *Service) recordBatch(ctx context.Context, tx *store.Tx, b *groupcommit.Batch[outcome], run func(context.Context) error) error {
	if err := run(ctx); err != nil {
		return err
	}
	if slices.ContainsFunc(b.Items, func(o outcome) bool { return o.kind == outcomeRelease }) {
		// Rows handed back are due again at once.
		tx.AfterCommit(s.kickPoolOnly)
	}
	return s.writeOutcomes(ctx, tx, b.Items)
}

// endpointTally is what one batch did to one endpoint's counters, in the
// order the attempts ended.
type endpointTally struct {
	successes int
	tail      int // failures after the last success in the batch
	lastOK    time.Time
	lastFail  time.Time
	gone      bool
}

type logRow struct {
	id, workspaceID, webhookID, eventID, event, kind string
	eventSeq                                         sql.NullInt64
	attempt                                          int
	status                                           *int
	body                                             string
	durationMs                                       int64
	err                                              *string
	payload                                          *string
	at                                               time.Time
}

func (r logRow) args() []any {
	return []any{r.id, r.workspaceID, r.webhookID, r.eventID, r.eventSeq, r.event, r.kind, r.attempt, r.status, r.body, r.durationMs, r.err, r.payload, store.Millis(r.at)}
}

const logRowColumns = 14

// attemptLogRow is the delivery log row of one attempt.
func attemptLogRow(j *job, kind string, attempt int, a Attempt, at time.Time) logRow {
	r := logRow{
		id: ids.New("wha"), workspaceID: j.workspaceID, webhookID: j.webhookID, eventID: j.eventID, eventSeq: j.eventSeq, event: j.eventName,
		kind: kind, attempt: attempt, body: a.Body, durationMs: a.Duration.Milliseconds(), at: at,
	}
	if a.StatusCode != 0 {
		code := a.StatusCode
		r.status = &code
	}
	if !a.Success {
		e := a.Err
		r.err = &e
	}
	return r
}

// writeOutcomes records a batch of outcomes in tx: the log
// rows, the endpoints' counters (and any disabling they cause), and each
// delivery row's fate: deleted when done or abandoned, rescheduled along the
// curve when failed, handed back when not attempted. Every row write checks
// the claim, so a row whose lease ended and was taken by another node is
// left to that node.
func (s *Service) writeOutcomes(ctx context.Context, tx *store.Tx, outs []outcome) error {
	var logs []logRow
	tallies := map[string]*endpointTally{}
	var order []string
	deletes := map[string][]any{} // claim -> seqs
	type reschedule struct {
		seq      int64
		claim    string
		attempts int
		next     int64
	}
	var failed []reschedule
	var released []*job
	for _, o := range outs {
		j := o.job
		switch o.kind {
		case outcomeRelease:
			released = append(released, j)
		case outcomeDrop:
			deletes[j.claim] = append(deletes[j.claim], j.seq)
		case outcomeSent:
			n := j.attempts + 1
			a := o.attempt
			logs = append(logs, attemptLogRow(j, "event", n, a, o.at))
			t := tallies[j.webhookID]
			if t == nil {
				t = &endpointTally{}
				tallies[j.webhookID] = t
				order = append(order, j.webhookID)
			}
			if a.Success {
				t.successes++
				t.tail = 0
				t.lastOK = o.finished
				deletes[j.claim] = append(deletes[j.claim], j.seq)
				continue
			}
			t.tail++
			t.lastFail = o.finished
			t.gone = t.gone || a.Gone
			delay, again := NextDelay(n, a.RetryAfter)
			if !again {
				msg := fmt.Sprintf("abandoned after %d attempts: %s", n, a.Err)
				logs = append(logs, logRow{
					id: ids.New("wha"), workspaceID: j.workspaceID, webhookID: j.webhookID, eventID: j.eventID, eventSeq: j.eventSeq,
					event: j.eventName, kind: "abandoned", attempt: n, err: &msg,
					// A millisecond after the last attempt, so the log lists it last.
					at: o.at.Add(time.Millisecond),
				})
				deletes[j.claim] = append(deletes[j.claim], j.seq)
				continue
			}
			failed = append(failed, reschedule{j.seq, j.claim, n, store.Millis(o.finished.Add(delay))})
		}
	}
	now := s.clock.Now()
	if err := insertLogRows(ctx, tx, logs); err != nil {
		return err
	}
	for _, id := range order {
		disabled, err := applyTally(ctx, tx, id, tallies[id], now)
		if err != nil {
			return err
		}
		if disabled {
			if err := holdQueued(ctx, tx, id); err != nil {
				return err
			}
		}
	}
	for claim, seqs := range deletes {
		for start := 0; start < len(seqs); start += 512 {
			if err := deleteDelivered(ctx, tx, claim, seqs[start:min(start+512, len(seqs))]); err != nil {
				return err
			}
		}
	}
	for _, f := range failed {
		if err := retryLater(ctx, tx, f.seq, f.claim, f.attempts, f.next); err != nil {
			return err
		}
	}
	for _, j := range released {
		if err := releaseClaim(ctx, tx, j.seq, j.claim); err != nil {
			return err
		}
	}
	return nil
}
