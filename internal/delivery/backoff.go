package delivery

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/outbound"
)

// Per-destination shaping. A receiving domain that answers "slow down"
// (421/4xx rate-limit replies, outbound.IsRateLimited) is held at once; one
// that keeps refusing for policy or reputation (5.7.x, blocklists, spam
// verdicts: PolicyTrip in a row) is held too. While a domain is held this
// node sends it nothing: its recipients wait (no attempt is counted) and
// the job sleeps until the hold ends. Each new hold doubles the last, from
// holdBase up to holdMax; one accepted message clears the domain. The state
// is per node and in memory: every node learns a receiver's mood on its own
// (they share the receiver's answers, not a table), and a restart starts
// gentle again at holdBase.
const (
	holdBase   = time.Minute
	holdMax    = time.Hour
	PolicyTrip = 3
)

// Hold reasons, as the metrics and Held report them.
const (
	HoldRateLimit = "rate_limit"
	HoldPolicy    = "policy"
	HoldTimeout   = "timeout" // a server that hangs instead of answering
)

// Hold is one receiving domain this node is not sending to right now.
type Hold struct {
	Domain string
	Reason string // HoldRateLimit or HoldPolicy
	Until  time.Time
	Trips  int    // holds in a row (each doubles the wait)
	Last   string // the reply that caused it
}

type destState struct {
	policy int // policy refusals in a row
	trips  int
	until  time.Time
	reason string
	last   string
}

type backoff struct {
	mu sync.Mutex
	m  map[string]*destState
}

func newBackoff() *backoff { return &backoff{m: map[string]*destState{}} }

// held returns when domain's hold ends, or the zero time.
func (b *backoff) held(domain string, now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.m[domain]; st != nil && now.Before(st.until) {
		return st.until
	}
	return time.Time{}
}

// observe learns from one attempt's answers for one domain. It returns the
// new hold when this attempt started one.
func (b *backoff) observe(domain string, results []outbound.RcptResult, now time.Time) *Hold {
	var ok, rate, hung bool
	policy := 0
	last := ""
	for _, r := range results {
		switch {
		case r.OK:
			ok = true
		case r.Timeout:
			hung, last = true, "no answer in time: "+r.Message
		case r.Temporary && outbound.IsRateLimited(r.Code, r.Enhanced, r.Message):
			rate, last = true, replyText(r)
		case !r.Temporary && r.Code >= 500:
			if outbound.IsPolicyRefusal(outbound.Classify(r.Code, r.Enhanced, r.Message)) {
				policy++
				last = replyText(r)
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.m[domain]
	if !rate && !hung && policy == 0 {
		if ok && st != nil && !now.Before(st.until) {
			delete(b.m, domain) // the receiver takes mail again
		}
		return nil
	}
	if st == nil {
		st = &destState{}
		b.m[domain] = st
	}
	reason := HoldRateLimit
	switch {
	case hung:
		reason = HoldTimeout
	case !rate:
		st.policy += policy
		if st.policy < PolicyTrip {
			return nil
		}
		reason = HoldPolicy
	}
	if now.Before(st.until) {
		return nil // already held (a send that was in flight)
	}
	st.policy = 0
	st.trips++
	wait := holdBase << min(st.trips-1, 10)
	if wait > holdMax {
		wait = holdMax
	}
	st.until, st.reason, st.last = now.Add(wait), reason, last
	return &Hold{Domain: domain, Reason: reason, Until: st.until, Trips: st.trips, Last: last}
}

// list returns the domains held at now, by domain.
func (b *backoff) list(now time.Time) []Hold {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Hold
	for d, st := range b.m {
		if now.Before(st.until) {
			out = append(out, Hold{Domain: d, Reason: st.reason, Until: st.until, Trips: st.trips, Last: st.last})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Domain < out[j].Domain })
	return out
}

func replyText(r outbound.RcptResult) string {
	return diagnostic(Recipient{Code: r.Code, Enhanced: r.Enhanced, Message: r.Message})
}

func domainOfAddr(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return strings.ToLower(addr[i+1:])
	}
	return ""
}

// Held lists the receiving domains this node holds back now (see
// backoff): the operator's view of per-destination shaping, also exported
// as the mailroom_delivery_destination_hold_seconds metric.
func (s *Service) Held() []Hold { return s.backoff.list(s.clock.Now()) }

// holdCollector exports each held domain's remaining hold.
type holdCollector struct {
	s    *Service
	desc *prometheus.Desc
}

func (c holdCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c holdCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.s.clock.Now()
	for _, h := range c.s.Held() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, h.Until.Sub(now).Seconds(), h.Domain, h.Reason)
	}
}

func newHoldCollector(s *Service) prometheus.Collector {
	return holdCollector{s: s, desc: prometheus.NewDesc("mailroom_delivery_destination_hold_seconds",
		"Seconds until this node sends to a receiving domain again, for each domain held back after rate-limit replies or repeated policy refusals.",
		[]string{"domain", "reason"}, nil)}
}
