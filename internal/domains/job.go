package domains

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// RecheckArgs is the nightly domain pass (Service.RecheckAll).
type RecheckArgs struct{}

// Kind names the job in the queue.
func (RecheckArgs) Kind() string { return "domains_recheck" }

// RecheckWorker runs the nightly pass.
type RecheckWorker struct {
	river.WorkerDefaults[RecheckArgs]
	Service *Service
}

// Work checks every custom domain; only storage errors make River retry.
func (w *RecheckWorker) Work(ctx context.Context, _ *river.Job[RecheckArgs]) error {
	_, err := w.Service.RecheckAll(ctx)
	return err
}

// Timeout leaves room for many domains at a few lookups each.
func (w *RecheckWorker) Timeout(*river.Job[RecheckArgs]) time.Duration { return time.Hour }

// RecheckPeriodic schedules the pass every Config.RecheckEvery (24 h by
// default). It does not run at start, so restarts do not hammer DNS.
func (s *Service) RecheckPeriodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(s.cfg.RecheckEvery), func() (river.JobArgs, *river.InsertOpts) {
		return RecheckArgs{}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: s.cfg.RecheckEvery}}
	}, nil)
}
