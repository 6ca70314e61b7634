package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/jobs"
)

// queueCollector reads the queue's backlog at scrape time: the total
// (mailroom_queue_depth) and, per queue (lane), the jobs waiting and how
// long the oldest due one has waited: the figure to alert on when delivery
// falls behind.
type queueCollector struct{ q *jobs.Queue }

var (
	queueDepthDesc  = prometheus.NewDesc("mailroom_queue_depth", "Jobs waiting to run (available, scheduled or retrying).", nil, nil)
	queueJobsDesc   = prometheus.NewDesc("mailroom_queue_jobs", "Jobs waiting to run, per queue (deliver is the transactional lane, marketing the marketing lane).", []string{"queue"}, nil)
	queueOldestDesc = prometheus.NewDesc("mailroom_queue_oldest_job_seconds", "How long the oldest due job of each queue has waited past its time.", []string{"queue"}, nil)
)

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueJobsDesc
	ch <- queueOldestDesc
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	lanes, err := c.q.Lanes(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, -1)
		return
	}
	var total int64
	seen := map[string]bool{}
	for _, l := range lanes {
		total += l.Waiting
		seen[l.Queue] = true
		ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(l.Waiting), l.Queue)
		ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, max(0, l.OldestDueAt), l.Queue)
	}
	// The two mail lanes are always there, so an alert's series exists at 0.
	for _, q := range []string{jobs.QueueDeliver, jobs.QueueMarketing} {
		if !seen[q] {
			ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, 0, q)
			ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, 0, q)
		}
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(total))
}
