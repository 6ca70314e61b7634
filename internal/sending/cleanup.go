package sending

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// CleanupArgs is the hourly housekeeping pass: idempotency keys older than
// the spec's 24 hours are forgotten. The kind keeps its old name, so jobs
// already queued still find their worker.
type CleanupArgs struct{}

// Kind names the job in the queue.
func (CleanupArgs) Kind() string { return "cleanup" }

// CleanupWorker runs CleanupArgs.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	S *Service
}

// Work deletes expired idempotency keys.
func (w *CleanupWorker) Work(ctx context.Context, _ *river.Job[CleanupArgs]) error {
	return forgetKeys(ctx, w.S.db, w.S.clock.Now().Add(-IdempotencyWindow))
}

// CleanupPeriodic schedules the pass every hour.
func CleanupPeriodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
		return CleanupArgs{}, nil
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
