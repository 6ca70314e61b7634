package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/jobs"
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
	for _, ref := range emails {
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func(ref jobs.EmailRef) {
			defer wg.Done()
			defer func() { <-l.slots }()
			next, err := s.deliver(ctx, ref.WorkspaceID, ref.EmailID, l)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if next > 0 {
				retries = append(retries, retry{ref, int64(next)})
			}
		}(ref)
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
