package analytics

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/store"
)

// Limits and values of the analytics routes (the spec's Analytics table).
const (
	MaxWindowDays      = 400
	DefaultDays        = 30
	MaxTagKeys         = 25
	MaxBreakdown       = 100 // breakdown items answered, most sends first
	dateLayout         = "2006-01-02"
	GroupByDay         = "day"
	GroupByWeek        = "week"
	GroupByMonth       = "month"
	BreakdownTag       = "tag"
	BreakdownDomain    = "domain"
	BreakdownMailClass = "mail_class"
	BreakdownTemplate  = "template"
)

// Service answers the analytics reads from the rollups.
type Service struct {
	db    *store.DB
	clock clock.Clock
}

// New returns the service.
func New(db *store.DB, c clock.Clock) *Service {
	if c == nil {
		c = clock.Real{}
	}
	return &Service{db: db, clock: c}
}

// Query is a GET /v1/analytics request as the caller wrote it; Resolve
// checks it. Empty strings are absent parameters.
type Query struct {
	WorkspaceID string
	From, To    string // YYYY-MM-DD UTC, both inclusive
	GroupBy     string
	Breakdown   string
	TagKey      string
	MailClass   string
	Domain      string
	TemplateID  string
	Tag         string // key:value

	from, to   int64 // days, set by resolve
	filterKey  string
	filterVal  string
	hasTagFilt bool
}

func parseDay(name, s string) (int64, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return 0, apierr.InvalidRequest("%s %q is not a date; write YYYY-MM-DD (UTC).", name, apierr.Clip(s, 64))
	}
	return Day(t), nil
}

// resolve checks q (the spec's 400s) and settles its defaults: to is
// today, from is 30 days before to (when only to is given, 30 days before
// it), the window at most 400 days inclusive.
func (q *Query) resolve(today int64) error {
	q.to = today
	if q.To != "" {
		d, err := parseDay("to", q.To)
		if err != nil {
			return err
		}
		q.to = d
	}
	q.from = q.to - DefaultDays
	if q.From != "" {
		d, err := parseDay("from", q.From)
		if err != nil {
			return err
		}
		q.from = d
	}
	if q.to < q.from {
		return apierr.InvalidRequest("to (%s) is before from (%s).", dayString(q.to), dayString(q.from))
	}
	if n := q.to - q.from + 1; n > MaxWindowDays {
		return apierr.InvalidRequest("The window from %s to %s is %d days; at most %d are allowed.", dayString(q.from), dayString(q.to), n, MaxWindowDays).
			WithNext("Ask for a shorter range, or several in turn.")
	}
	switch q.GroupBy {
	case "":
		q.GroupBy = GroupByDay
	case GroupByDay, GroupByWeek, GroupByMonth:
	default:
		return apierr.InvalidRequest("group_by %q is not one of day, week, month.", apierr.Clip(q.GroupBy, 64))
	}
	switch q.Breakdown {
	case "", BreakdownDomain, BreakdownMailClass, BreakdownTemplate:
		if q.TagKey != "" && q.Breakdown != "" {
			return apierr.InvalidRequest("tag_key goes with breakdown=tag only.")
		}
	case BreakdownTag:
		if q.TagKey == "" {
			return apierr.InvalidRequest("breakdown=tag needs tag_key (which tag's values to break down by).").
				WithNext("GET /v1/analytics/tags lists the tag keys in use.")
		}
	default:
		return apierr.InvalidRequest("breakdown %q is not one of domain, tag, mail_class, template.", apierr.Clip(q.Breakdown, 64))
	}
	if q.TagKey != "" && q.Breakdown == "" {
		return apierr.InvalidRequest("tag_key goes with breakdown=tag only.")
	}
	switch q.MailClass {
	case "", Transactional, Marketing:
	default:
		return apierr.InvalidRequest("mail_class %q is not transactional or marketing.", apierr.Clip(q.MailClass, 64))
	}
	q.Domain = strings.ToLower(strings.TrimSuffix(q.Domain, "."))
	if q.Tag != "" {
		k, v, ok := strings.Cut(q.Tag, ":")
		if !ok || k == "" {
			return apierr.InvalidRequest("tag %q must be key:value.", apierr.Clip(q.Tag, 64))
		}
		q.filterKey, q.filterVal, q.hasTagFilt = k, v, true
		if q.Breakdown == BreakdownTag && q.TagKey != k {
			return apierr.InvalidRequest("A tag filter (%s) and a breakdown by another tag key (%s) cannot be combined: the counters keep each tag on its own.", apierr.Clip(k, 64), apierr.Clip(q.TagKey, 64)).
				WithNext("Break down by the filter's own key, or drop the tag filter.")
		}
	}
	return nil
}

func dayString(d int64) string { return DayTime(d).Format(dateLayout) }

// Report is the answer of GET /v1/analytics.
type Report struct {
	From, To  string
	GroupBy   string
	Days      int
	Totals    Counts
	Series    []Period
	Breakdown *Breakdown
	Notes     []string
}

// Period is one entry of the series: the period's first day and its counts.
type Period struct {
	Start  string
	Counts Counts
}

// Breakdown is the range's counts per value of one dimension.
type Breakdown struct {
	By     string
	TagKey string
	Items  []Item
	More   int // values left out past MaxBreakdown
}

// Item is one value of a breakdown.
type Item struct {
	Value  string
	Counts Counts
}

// Report answers q from the rollups.
func (s *Service) Report(ctx context.Context, q Query) (*Report, error) {
	now := s.clock.Now().UTC()
	today := Day(now)
	if err := q.resolve(today); err != nil {
		return nil, err
	}
	var series source
	if q.hasTagFilt {
		v := q.filterVal
		series = sourceFor(&q, q.from, q.to, q.filterKey, &v)
	} else {
		series = sourceFor(&q, q.from, q.to, "", nil)
	}
	days, err := byDay(ctx, s.db, series)
	if err != nil {
		return nil, err
	}
	r := &Report{From: dayString(q.from), To: dayString(q.to), GroupBy: q.GroupBy, Days: int(q.to - q.from + 1)}
	r.Series = bucket(days, q.from, q.to, q.GroupBy)
	for _, p := range r.Series {
		r.Totals.add(p.Counts)
	}
	if q.Breakdown != "" {
		src := series
		if q.Breakdown == BreakdownTag && !q.hasTagFilt {
			src = sourceFor(&q, q.from, q.to, q.TagKey, nil)
		}
		groups, err := byValue(ctx, s.db, src, q.Breakdown)
		if err != nil {
			return nil, err
		}
		r.Breakdown = breakdown(groups, q)
	}
	r.Notes = notes(r, q, today)
	return r, nil
}

func breakdown(groups []group, q Query) *Breakdown {
	b := &Breakdown{By: q.Breakdown, TagKey: q.TagKey}
	slices.SortFunc(groups, func(x, y group) int {
		if x.counts.Sent != y.counts.Sent {
			if x.counts.Sent > y.counts.Sent {
				return -1
			}
			return 1
		}
		return strings.Compare(x.value, y.value)
	})
	if len(groups) > MaxBreakdown {
		b.More = len(groups) - MaxBreakdown
		groups = groups[:MaxBreakdown]
	}
	b.Items = make([]Item, len(groups))
	for i, g := range groups {
		b.Items[i] = Item{Value: g.value, Counts: g.counts}
	}
	return b
}

// bucket spreads the per-day sums over every period of [from, to] (empty
// periods included, so a chart needs no gap filling): days as they are,
// ISO weeks starting Monday, calendar months; the first period starts at
// from even when its week or month began earlier.
func bucket(days []group, from, to int64, groupBy string) []Period {
	startOf := func(d int64) int64 {
		switch groupBy {
		case GroupByWeek:
			wd := (int64(DayTime(d).Weekday()) + 6) % 7 // Monday 0
			return max(from, d-wd)
		case GroupByMonth:
			t := DayTime(d)
			return max(from, Day(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)))
		}
		return d
	}
	var out []Period
	index := map[int64]int{}
	for d := from; d <= to; d++ {
		st := startOf(d)
		if _, ok := index[st]; !ok {
			index[st] = len(out)
			out = append(out, Period{Start: dayString(st)})
		}
	}
	for _, g := range days {
		if i, ok := index[startOf(g.day)]; ok {
			out[i].Counts.add(g.counts)
		}
	}
	return out
}

func notes(r *Report, q Query, today int64) []string {
	n := []string{
		"opens and clicks count people only; machine_opens and machine_clicks count mail privacy proxies (Apple Mail Privacy Protection), link scanners that fetch within seconds of delivery and known bots, which no rate includes.",
		"Sends to the reserved test addresses never count.",
		"sent counts recipients whose delivery was attempted (delivered or bounced at hand-over); a bounce reported later adds to bounced only.",
		"open_rate and click_rate are unique opens and clicks over delivered; they need track_opens / track_clicks on the send.",
	}
	if q.to >= today && q.from <= today {
		n = append(n, "Today ("+dayString(today)+", UTC) is a partial day: its counts are still growing.")
	}
	if q.to > today {
		n = append(n, "The range runs past today; later days are empty.")
	}
	if r.Breakdown != nil && r.Breakdown.More > 0 {
		n = append(n, "The breakdown lists the 100 values with the most sends; the rest are in totals only.")
	}
	return n
}

// Rates are the ratios of a set of counts; nil where the denominator is 0.
type Rates struct {
	Delivery, Bounce, Complaint, Open, Click *float64
}

// Rates of c: delivered, bounced over sent; complained, unique opens and
// unique clicks over delivered. Rounded to four places.
func (c Counts) Rates() Rates {
	ratio := func(a, b int64) *float64 {
		if b <= 0 {
			return nil
		}
		v := math.Round(float64(a)/float64(b)*10000) / 10000
		return &v
	}
	return Rates{
		Delivery:  ratio(c.Delivered, c.Sent),
		Bounce:    ratio(c.Bounced, c.Sent),
		Complaint: ratio(c.Complained, c.Delivered),
		Open:      ratio(c.UniqueOpens, c.Delivered),
		Click:     ratio(c.UniqueClicks, c.Delivered),
	}
}

// TagKeys answers GET /v1/analytics/tags: the tag keys most used over the
// last days (today included), at most 25. days 0 means the default 30.
func (s *Service) TagKeys(ctx context.Context, workspaceID string, days int) ([]TagKey, error) {
	if days == 0 {
		days = DefaultDays
	}
	if days < 1 || days > MaxWindowDays {
		return nil, apierr.InvalidRequest("days must be between 1 and %d.", MaxWindowDays)
	}
	today := Day(s.clock.Now().UTC())
	return topTagKeys(ctx, s.db, workspaceID, today-int64(days)+1, today, MaxTagKeys)
}
