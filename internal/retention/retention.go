// Package retention runs the hourly purge of what operators keep for a
// while only (issue #42): email bodies, events, raw received messages and
// the request log past their settings (config.Retention). Each area deletes
// its own rows (sending.PurgeBodies, events.Purge, inbound.PurgeRaw,
// requestlog.Purge); this package only
// schedules them, in slices, and counts what went. Webhook delivery logs
// are purged by the webhooks area's own housekeeping.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/clock"
	"mailroom/internal/mailmetrics"
	"mailroom/internal/store"
)

// Purge removes up to limit items older than before and says how many.
type Purge func(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error)

// Kind is one thing retention purges.
type Kind struct {
	Name  string        // the metric's kind label: bodies, events, received
	Keep  time.Duration // 0: kept for ever
	Purge Purge
}

// slice is how many items one statement removes: small enough that the
// writer is never held for long; maxSlices bounds one pass (the next pass,
// an hour later, goes on).
const (
	slice     = 2000
	maxSlices = 500
)

// Args is the hourly purge job.
type Args struct{}

// Kind names the job in the queue.
func (Args) Kind() string { return "retention_purge" }

// Worker runs Args.
type Worker struct {
	river.WorkerDefaults[Args]
	DB    *store.DB
	Clock clock.Clock
	Kinds []Kind
	Meter *mailmetrics.Meter
	Log   *slog.Logger
}

// Timeout leaves a long first pass (a node that never purged) time to run.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration { return 30 * time.Minute }

// Work purges each kind in slices until nothing old is left.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	_, err := w.Run(ctx)
	return err
}

// Run is one pass; it returns how many items each kind lost.
func (w *Worker) Run(ctx context.Context) (map[string]int64, error) {
	now := w.Clock.Now()
	out := map[string]int64{}
	for _, k := range w.Kinds {
		if k.Keep <= 0 {
			continue
		}
		before := now.Add(-k.Keep)
		for range maxSlices {
			n, err := k.Purge(ctx, w.DB, before, slice)
			if err != nil {
				return out, err
			}
			out[k.Name] += n
			w.Meter.Purged(k.Name, n)
			if n == 0 {
				break
			}
		}
		if out[k.Name] > 0 {
			w.Log.Info("retention purge", "kind", k.Name, "older_than", before.UTC().Format(time.RFC3339), "removed", out[k.Name])
		}
	}
	return out, nil
}

// Periodic schedules the pass every hour, and once at start.
func Periodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
		return Args{}, nil
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
