// Package analytics keeps the counters behind GET /v1/analytics and
// /v1/analytics/tags and answers those reads. Counters are rollups: one row
// per workspace, UTC day and combination of the email's single-valued
// dimensions (sending domain, mail class, template) in analytics_cells, the
// same once more per tag, and per day (and tag) alone in analytics_days.
// Whoever raises what a
// counter counts (an email.* event, an open, a click) calls Add inside its
// own transaction, so a counter moves exactly when the change it counts
// commits; reads sum rollup rows and never scan the emails table, so a
// 400-day window costs about as much as a day. Test addresses never count:
// callers do not Add for them.
package analytics

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"mailroom/internal/store"
)

// Mail classes (the spec's mail_class filter and breakdown).
const (
	Transactional = "transactional"
	Marketing     = "marketing"
)

// Dims are the dimensions of the email behind a count.
type Dims struct {
	Domain     string            // the sending domain (From's), lowercased
	MailClass  string            // Transactional (default) or Marketing
	TemplateID string            // "" when the email used no template
	Tags       map[string]string // the email's tags
}

// Counts are the counters of one rollup row (or a delta to add to one).
type Counts struct {
	Sent, Delivered, Bounced, Complained int64
	Opens, UniqueOpens                   int64 // human opens; the first per email is unique
	Clicks, UniqueClicks                 int64 // human clicks
	MachineOpens, MachineClicks          int64 // proxies, scanners, bots (see docs/decisions.md)
}

func (c *Counts) add(o Counts) {
	c.Sent += o.Sent
	c.Delivered += o.Delivered
	c.Bounced += o.Bounced
	c.Complained += o.Complained
	c.Opens += o.Opens
	c.UniqueOpens += o.UniqueOpens
	c.Clicks += o.Clicks
	c.UniqueClicks += o.UniqueClicks
	c.MachineOpens += o.MachineOpens
	c.MachineClicks += o.MachineClicks
}

func (c Counts) zero() bool { return c == Counts{} }

// Day is the rollup day of t: whole days since 1970-01-01 UTC.
func Day(t time.Time) int64 {
	s := t.Unix()
	d := s / 86400
	if s < 0 && s%86400 != 0 {
		d--
	}
	return d
}

// DayTime is the start (UTC) of rollup day d.
func DayTime(d int64) time.Time { return time.Unix(d*86400, 0).UTC() }

// Add counts c against the email's dimensions on the day of at, inside tx.
// Nothing is written until the transaction flushes: every Add of one
// transaction is summed per row first, and each row then costs one upsert.
func Add(tx *store.Tx, workspaceID string, at time.Time, d Dims, c Counts) {
	if c.zero() || workspaceID == "" {
		return
	}
	if d.MailClass == "" {
		d.MailClass = Transactional
	}
	d.Domain = strings.ToLower(d.Domain)
	p := pendingOf(tx)
	p.adds = append(p.adds, pendingAdd{ws: workspaceID, day: Day(at), dims: d, counts: c})
}

type pendingAdd struct {
	ws     string
	day    int64
	dims   Dims
	counts Counts
}

// pending is a transaction's counts not yet written. It is
// store.Rewindable: a group-committed write that fails (SAVEPOINT rolled
// back) takes its counts back with it.
type pending struct{ adds []pendingAdd }

func (p *pending) Mark() int    { return len(p.adds) }
func (p *pending) Rewind(n int) { p.adds = p.adds[:min(n, len(p.adds))] }
func (p *pending) empty() bool  { return len(p.adds) == 0 }
func (p *pending) reset()       { p.adds = p.adds[:0] }
func (p *pending) each(f func(pendingAdd)) {
	for _, a := range p.adds {
		f(a)
	}
}

type pendingKey struct{}

func pendingOf(tx *store.Tx) *pending {
	return tx.Local(pendingKey{}, func() any {
		p := &pending{}
		tx.BeforeFlush(p.flush)
		return p
	}).(*pending)
}

// cellKey names a row of analytics_cells; a row of analytics_days is one
// with domain, class and template empty. key "" is the email as a whole.
type cellKey struct {
	ws                        string
	key                       string
	day                       int64
	value                     string
	domain, class, templateID string
}

func compareCells(a, b cellKey) int {
	return cmp.Or(strings.Compare(a.ws, b.ws), strings.Compare(a.key, b.key), cmp.Compare(a.day, b.day),
		strings.Compare(a.value, b.value), strings.Compare(a.domain, b.domain), strings.Compare(a.class, b.class),
		strings.Compare(a.templateID, b.templateID))
}

// flush sums the transaction's counts per row of both tables (the email as
// a whole under key "", then once per tag) and defers one upsert row each:
// they join the transaction's multi-row statements (one round trip on
// PostgreSQL) rather than a statement each. Rows go in key order so that
// two concurrent transactions (PostgreSQL) lock shared rows in the same
// order and never deadlock.
func (p *pending) flush(ctx context.Context, tx *store.Tx) error {
	if p.empty() {
		return nil
	}
	cells := map[cellKey]*Counts{}
	days := map[cellKey]*Counts{}
	bump := func(m map[cellKey]*Counts, k cellKey, c Counts) {
		if m[k] == nil {
			m[k] = &Counts{}
		}
		m[k].add(c)
	}
	p.each(func(a pendingAdd) {
		k := cellKey{ws: a.ws, day: a.day, domain: a.dims.Domain, class: a.dims.MailClass, templateID: a.dims.TemplateID}
		bump(cells, k, a.counts)
		bump(days, cellKey{ws: a.ws, day: a.day}, a.counts)
		for tk, tv := range a.dims.Tags {
			if tk == "" { // "" is the whole email's row
				continue
			}
			k.key, k.value = tk, tv
			bump(cells, k, a.counts)
			bump(days, cellKey{ws: a.ws, key: tk, day: a.day, value: tv}, a.counts)
		}
	})
	p.reset()
	for _, k := range slices.SortedFunc(maps.Keys(cells), compareCells) {
		deferCell(tx, k, *cells[k])
	}
	for _, k := range slices.SortedFunc(maps.Keys(days), compareCells) {
		deferDay(tx, k, *days[k])
	}
	return nil
}
