package groupcommit

import "github.com/prometheus/client_golang/prometheus"

// metrics is what a committer reports at /metrics, labelled with its name:
// how many writes share a commit, how long the committer spends on one, and
// how long its answers then wait for the disk. Their sums over time say
// whether the committer is the limit (seconds per second near 1) and how
// much of its cycle is the flush.
type metrics struct {
	writes    prometheus.Histogram // writes per commit
	seconds   prometheus.Histogram // one commit: its statements and COMMIT (and SQLite's FinishWAL)
	flush     prometheus.Histogram // after COMMIT until on disk (SQLite's WAL flush; PostgreSQL's COMMIT is durable)
	fallbacks prometheus.Counter   // batches that failed and were run again one write at a time
	deadlocks prometheus.Counter   // writes run again alone after PostgreSQL picked them as a deadlock victim
	reruns    prometheus.Counter   // Optimistic batches run again without a write that failed
}

func newMetrics(name string, maxBatch int, reg prometheus.Registerer) metrics {
	labels := prometheus.Labels{"committer": name}
	buckets := 1
	for n := 1; n < maxBatch; n *= 2 {
		buckets++
	}
	m := metrics{
		writes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mailroom_group_commit_writes", Help: "Writes sharing one group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, buckets), ConstLabels: labels,
		}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mailroom_group_commit_seconds", Help: "Time a group committer spends on one commit: its statements and COMMIT (on SQLite also the WAL copy that follows a background checkpoint).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14), ConstLabels: labels, // 100 µs to 0.8 s
		}),
		flush: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mailroom_group_commit_flush_seconds", Help: "Time a group commit's answers wait after COMMIT for its data to reach the disk (SQLite's WAL flush).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14), ConstLabels: labels,
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mailroom_group_commit_fallbacks_total", Help: "Group commits that failed as a whole and were run again one write at a time.",
			ConstLabels: labels,
		}),
		deadlocks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mailroom_group_commit_deadlock_retries_total", Help: "Writes run again alone after PostgreSQL picked them as a deadlock victim.",
			ConstLabels: labels,
		}),
		reruns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mailroom_group_commit_reruns_total", Help: "Group commits (Optimistic) rolled back and run again without a write that failed.",
			ConstLabels: labels,
		}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.seconds, m.flush, m.fallbacks, m.deadlocks, m.reruns)
	}
	return m
}
