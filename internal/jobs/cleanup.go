package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/clock"
	"mailroom/internal/store"
)

// CleanupArgs is the hourly housekeeping pass: idempotency keys older than
// the spec's 24 hours are forgotten.
type CleanupArgs struct{}

// Kind names the job in the queue.
func (CleanupArgs) Kind() string { return "cleanup" }

// CleanupWorker runs CleanupArgs.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	DB    *store.DB
	Clock clock.Clock
}

// Work deletes expired rows.
func (w *CleanupWorker) Work(ctx context.Context, _ *river.Job[CleanupArgs]) error {
	cutoff := w.Clock.Now().Add(-24 * time.Hour)
	_, err := w.DB.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, store.Millis(cutoff))
	return err
}

// CleanupPeriodic schedules the pass every hour.
func CleanupPeriodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
		return CleanupArgs{}, nil
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
