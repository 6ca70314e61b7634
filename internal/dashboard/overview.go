package dashboard

import (
	"net/http"
	"strconv"

	"mailroom/internal/analytics"
	"mailroom/internal/policy"
)

// chartDays is the overview's range: the last 30 days, today included.
const chartDays = 30

// bar is one day of a chart, its heights already scaled to the chart's
// 100-unit height (the SVG is drawn by the template, no script).
type bar struct {
	Day    string
	X      int
	A, B   int // heights of the day's two bars
	ALabel string
	BLabel string
	AY, BY int // their tops
	BX     int // the second bar's x
}

type overviewView struct {
	Paused     *policy.Hold // nil: not paused
	Throttled  *policy.Hold // nil: not throttled
	Quiet      bool         // the workspace has sent nothing in the range
	Totals     analytics.Counts
	Rates      analytics.Rates
	Volume     []bar // sends (A) and deliveries (B)
	RateBars   []bar // bounce (A) and complaint (B) rates, in hundredths of a percent
	VolumeMax  int64
	RateMaxPct string
	From, To   string
}

func (x *Dashboard) overview(w http.ResponseWriter, r *http.Request, s *session) error {
	var v overviewView
	if x.d.Policy != nil {
		st := x.d.Policy.Standing(s.key.WorkspaceID)
		v.Paused, v.Throttled = st.Paused, st.Throttled
	}
	if scope, bound := s.key.Denied(ws); scope == "" && !bound { // workspace-wide figures
		now := x.d.Clock.Now().UTC()
		rep, err := x.d.Analytics.Report(r.Context(), analytics.Query{WorkspaceID: s.key.WorkspaceID,
			From: now.AddDate(0, 0, 1-chartDays).Format("2006-01-02"), To: now.Format("2006-01-02"), GroupBy: "day"})
		if err != nil {
			return err
		}
		v.From, v.To, v.Totals, v.Rates = rep.From, rep.To, rep.Totals, rep.Totals.Rates()
		v.Quiet = rep.Totals.Sent == 0
		v.Volume, v.VolumeMax = volumeBars(rep.Series)
		var maxRate float64
		v.RateBars, maxRate = rateBars(rep.Series)
		v.RateMaxPct = strconv.FormatFloat(maxRate*100, 'f', 2, 64) + "%"
	}
	x.render(w, r, s, http.StatusOK, "overview", v)
	return nil
}

// barWidth is one day's slot in the 300-unit-wide chart (30 days × 10).
const barWidth = 10

func place(i int, a, b float64, top float64, al, bl string, day string) bar {
	h := func(v float64) int {
		if top <= 0 || v <= 0 {
			return 0
		}
		n := int(v / top * 100)
		if n < 1 {
			n = 1 // a day with anything shows
		}
		return n
	}
	br := bar{Day: day, X: i*barWidth + 1, A: h(a), B: h(b), ALabel: al, BLabel: bl}
	br.AY, br.BY, br.BX = 100-br.A, 100-br.B, br.X+4
	return br
}

func volumeBars(series []analytics.Period) ([]bar, int64) {
	var top int64
	for _, p := range series {
		top = max(top, p.Counts.Sent, p.Counts.Delivered)
	}
	out := make([]bar, len(series))
	for i, p := range series {
		out[i] = place(i, float64(p.Counts.Sent), float64(p.Counts.Delivered), float64(top),
			strconv.FormatInt(p.Counts.Sent, 10)+" sent", strconv.FormatInt(p.Counts.Delivered, 10)+" delivered", p.Start)
	}
	return out, top
}

func rateBars(series []analytics.Period) ([]bar, float64) {
	val := func(f *float64) float64 {
		if f == nil {
			return 0
		}
		return *f
	}
	var top float64
	for _, p := range series {
		rt := p.Counts.Rates()
		top = max(top, val(rt.Bounce), val(rt.Complaint))
	}
	out := make([]bar, len(series))
	for i, p := range series {
		rt := p.Counts.Rates()
		out[i] = place(i, val(rt.Bounce), val(rt.Complaint), top,
			"bounce "+percent(rt.Bounce), "complaints "+percent(rt.Complaint), p.Start)
	}
	return out, top
}
