package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/jobs"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// BatchWorker runs jobs.DeliverBatchArgs: every email of the batch is
// delivered concurrently (bounded node-wide by the service's slots), and
// each email that ends the attempt deferred is handed to its own
// jobs.DeliverArgs job at its retry time, in one transaction. If the node
// dies mid-batch the queue runs the batch again after its lease; emails that
// already reached a final status are skipped by Deliver.
type BatchWorker struct {
	river.WorkerDefaults[jobs.DeliverBatchArgs]
	Service *Service
}

// Work delivers the batch.
func (w *BatchWorker) Work(ctx context.Context, job *river.Job[jobs.DeliverBatchArgs]) error {
	return w.Service.deliverBatch(ctx, job.Args.Emails, w.Service.transactional)
}

// MarketingBatchWorker runs jobs.MarketingBatchArgs like BatchWorker, on
// the marketing lane's own delivery slots, so that marketing mail never
// holds the slots transactional batches need.
type MarketingBatchWorker struct {
	river.WorkerDefaults[jobs.MarketingBatchArgs]
	Service *Service
}

// Work delivers the batch.
func (w *MarketingBatchWorker) Work(ctx context.Context, job *river.Job[jobs.MarketingBatchArgs]) error {
	return w.Service.deliverBatch(ctx, job.Args.Emails, w.Service.marketing)
}

// deliverBatch delivers emails concurrently, bounded by the lane.
func (s *Service) deliverBatch(ctx context.Context, emails []jobs.EmailRef, l lane) error {
	type retry struct {
		ref  jobs.EmailRef
		wait int64 // nanoseconds
	}
	var (
		mu      sync.Mutex
		retries []retry
		errs    []error
		wg      sync.WaitGroup
	)
	loaded, err := s.loadBatch(ctx, emails)
	if err != nil {
		return err
	}
	dispatched := make(map[string]bool, len(emails))
	for _, ref := range emails {
		if dispatched[ref.EmailID] {
			continue // named twice
		}
		dispatched[ref.EmailID] = true
		e, read := loaded[ref.EmailID]
		wg.Add(1)
		err := l.run(ctx, func() {
			defer wg.Done()
			next, err := time.Duration(0), e.err
			switch {
			case !read: // gone, or too heavy for the batch's read
				next, err = s.deliver(ctx, ref.WorkspaceID, ref.EmailID, l)
			case err == nil && e.email.deliverable(ref.WorkspaceID):
				next, err = s.deliverEmail(ctx, e.email, l)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if next > 0 {
				retries = append(retries, retry{ref, int64(next)})
			}
		})
		if err != nil {
			wg.Done()
			wg.Wait()
			return err
		}
	}
	wg.Wait()
	if len(retries) > 0 {
		now := s.clock.Now()
		err := s.db.InTx(ctx, func(tx *store.Tx) error {
			for _, r := range retries {
				opts := jobs.DeliverArgs{}.InsertOpts()
				opts.ScheduledAt = now.Add(time.Duration(r.wait))
				tx.AddJob(river.InsertManyParams{Args: jobs.DeliverArgs{EmailID: r.ref.EmailID, WorkspaceID: r.ref.WorkspaceID}, InsertOpts: &opts})
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// batchBodyBytes bounds the body and attachments of an email read with its
// batch: a heavier one is read at its turn, so that the batch jobs a node
// runs at once never hold more than a few bodies of each.
const batchBodyBytes = 256 << 10

// loaded is an email of a batch as its one read found it, or why it could
// not be decoded.
type loaded struct {
	email *email
	err   error
}

// loadBatch reads the emails of a batch and the rows their bodies are
// rendered from (a broadcast's recipients) with one query each, instead of
// one of each per email. Suppressions are still read per email, as its
// turn comes (TestRecipientStatusFollowsEmail: one suppressed while the
// batch is under way is not sent to). An email not found, or heavier than
// batchBodyBytes, is left out.
func (s *Service) loadBatch(ctx context.Context, refs []jobs.EmailRef) (map[string]loaded, error) {
	ids := make([]string, len(refs))
	owner := make(map[string]string, len(refs))
	for i, r := range refs {
		ids[i] = r.EmailID
		owner[r.EmailID] = r.WorkspaceID
	}
	rows, err := sending.LoadOutgoingMany(ctx, s.db, ids, batchBodyBytes)
	if err != nil {
		return nil, err
	}
	out := make(map[string]loaded, len(rows))
	sources := map[string][]string{} // workspace -> body sources
	for _, o := range rows {
		e, err := decodeEmail(o)
		if err == nil {
			err = e.resolveRecipients(ctx, s.db)
		}
		if err != nil {
			out[o.ID] = loaded{err: err}
			continue
		}
		out[o.ID] = loaded{email: e}
		if e.BodySource != "" && e.deliverable(owner[e.ID]) {
			sources[e.WorkspaceID] = append(sources[e.WorkspaceID], e.BodySource)
		}
	}
	if s.bodies == nil {
		return out, nil
	}
	bodies := make(map[string]map[string]sending.RenderBody, len(sources)) // workspace -> source -> body
	for ws, srcs := range sources {
		if bodies[ws], err = s.bodies.Bodies(ctx, ws, srcs); err != nil {
			return nil, err
		}
	}
	for _, l := range out {
		if e := l.email; e != nil && e.BodySource != "" {
			e.render = bodies[e.WorkspaceID][e.BodySource]
		}
	}
	return out, nil
}
