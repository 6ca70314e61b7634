// Package mailmetrics holds the counters an operator alerts on: emails by
// outcome and lane, received mail, webhook deliveries, delivery latency and
// deferrals by destination (CONTRACT-WAVE3's names). The areas that own
// each moment call it after their transaction commits, so a counter never
// moves for something that was rolled back.
package mailmetrics

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of an email, each its own counter mailroom_emails_<outcome>_total.
const (
	Accepted   = "accepted"
	Sent       = "sent"
	Delivered  = "delivered"
	Bounced    = "bounced"
	Deferred   = "deferred"
	Complained = "complained"
	Failed     = "failed"
)

// Lanes (the lane label): mail classes as sending names them.
const (
	Transactional = "transactional"
	Marketing     = "marketing"
)

// maxDestinations caps the destination label's values: past it, new
// receiving domains count under "other", so a campaign to a million domains
// cannot grow the scrape without bound.
const maxDestinations = 200

// Meter is one process's mail counters. A nil *Meter counts nothing, so
// areas built without one (tests, tools) need no check.
type Meter struct {
	emails     map[string]*prometheus.CounterVec
	received   prometheus.Counter
	filtered   prometheus.Counter
	webhooks   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	deferrals  *prometheus.CounterVec
	submitted  *prometheus.CounterVec
	purged     *prometheus.CounterVec
	mu         sync.Mutex
	destSeen   map[string]bool
	collectors []prometheus.Collector
}

// New builds the counters and registers them on reg (when not nil).
func New(reg prometheus.Registerer) *Meter {
	m := &Meter{emails: map[string]*prometheus.CounterVec{}, destSeen: map[string]bool{}}
	help := map[string]string{
		Accepted:   "Recipients of emails accepted (committed) by the API, SMTP submission, broadcasts and automations.",
		Sent:       "Recipients handed over to a receiving server (email.sent).",
		Delivered:  "Recipients a receiving server accepted (email.delivered).",
		Bounced:    "Recipients bounced, by bounce type (email.bounced).",
		Deferred:   "Recipients deferred for a later attempt (a temporary failure).",
		Complained: "Recipients who reported the email as spam (email.complained).",
		Failed:     "Emails that could never be sent (the message could not be built or signed).",
	}
	for _, o := range []string{Accepted, Sent, Delivered, Bounced, Deferred, Complained, Failed} {
		labels := []string{"lane"}
		if o == Bounced {
			labels = append(labels, "type")
		}
		m.emails[o] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailroom_emails_" + o + "_total", Help: help[o]}, labels)
		m.collectors = append(m.collectors, m.emails[o])
	}
	m.received = prometheus.NewCounter(prometheus.CounterOpts{Name: "mailroom_received_total", Help: "Messages received into a mailbox (email.received)."})
	m.filtered = prometheus.NewCounter(prometheus.CounterOpts{Name: "mailroom_received_filtered_total", Help: "Messages received and filtered by a mailbox rule (email.filtered)."})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailroom_webhook_deliveries_total",
		Help: "Webhook delivery attempts by outcome: delivered (2xx), failed (another attempt follows), gave_up (none will)."}, []string{"outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mailroom_delivery_latency_seconds",
		Help:    "From acceptance to the receiving server's 250, per delivered email.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}}, []string{"lane"})
	m.deferrals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailroom_delivery_deferrals_total",
		Help: "Recipients deferred, by receiving domain (the first 200 domains seen; the rest as other)."}, []string{"destination"})
	m.submitted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailroom_submissions_total",
		Help: "Messages submitted over SMTP submission, by outcome (accepted, refused)."}, []string{"outcome"})
	m.purged = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailroom_retention_purged_total",
		Help: "Rows removed or emptied by the retention purge, by kind."}, []string{"kind"})
	m.collectors = append(m.collectors, m.received, m.filtered, m.webhooks, m.latency, m.deferrals, m.submitted, m.purged)
	// Every series an alert names exists from the start, at 0: a rate over
	// a missing series is no data, not zero.
	for _, lane := range []string{Transactional, Marketing} {
		for o, c := range m.emails {
			if o == Bounced {
				c.WithLabelValues(lane, "hard")
				c.WithLabelValues(lane, "soft")
				continue
			}
			c.WithLabelValues(lane)
		}
		m.latency.WithLabelValues(lane)
	}
	for _, o := range []string{"delivered", "failed", "gave_up"} {
		m.webhooks.WithLabelValues(o)
	}
	for _, k := range []string{"bodies", "events", "received", "webhook_logs", "request_logs"} {
		m.purged.WithLabelValues(k)
	}
	m.submitted.WithLabelValues("accepted")
	m.submitted.WithLabelValues("refused")
	if reg != nil {
		reg.MustRegister(m.collectors...)
	}
	return m
}

// Lane turns a mail class into the lane label (empty: transactional).
func Lane(class string) string {
	if class == Marketing {
		return Marketing
	}
	return Transactional
}

// Email counts n recipients reaching outcome in lane.
func (m *Meter) Email(outcome, lane string, n int) {
	if m == nil || n <= 0 {
		return
	}
	c, ok := m.emails[outcome]
	if !ok || outcome == Bounced {
		return
	}
	c.WithLabelValues(Lane(lane)).Add(float64(n))
}

// Bounce counts n bounced recipients of bounce type typ (hard, soft, ...).
func (m *Meter) Bounce(lane, typ string, n int) {
	if m == nil || n <= 0 {
		return
	}
	if typ == "" {
		typ = "undetermined"
	}
	m.emails[Bounced].WithLabelValues(Lane(lane), typ).Add(float64(n))
}

// Received counts one received message (filtered: a mailbox rule caught it).
func (m *Meter) Received(filtered bool) {
	if m == nil {
		return
	}
	if filtered {
		m.filtered.Inc()
		return
	}
	m.received.Inc()
}

// Webhook counts one webhook delivery attempt's outcome.
func (m *Meter) Webhook(outcome string) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
}

// Latency observes one delivered email's time from acceptance to 250.
func (m *Meter) Latency(lane string, d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.latency.WithLabelValues(Lane(lane)).Observe(d.Seconds())
}

// Deferral counts one deferred recipient at domain.
func (m *Meter) Deferral(domain string) {
	if m == nil {
		return
	}
	domain = strings.ToLower(domain)
	m.mu.Lock()
	if !m.destSeen[domain] {
		if len(m.destSeen) >= maxDestinations {
			domain = "other"
		} else {
			m.destSeen[domain] = true
		}
	}
	m.mu.Unlock()
	m.deferrals.WithLabelValues(domain).Inc()
}

// Submission counts one message submitted over SMTP (accepted or refused).
func (m *Meter) Submission(accepted bool) {
	if m == nil {
		return
	}
	if accepted {
		m.submitted.WithLabelValues("accepted").Inc()
		return
	}
	m.submitted.WithLabelValues("refused").Inc()
}

// Purged counts n rows the retention purge removed or emptied, by kind.
func (m *Meter) Purged(kind string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.purged.WithLabelValues(kind).Add(float64(n))
}
