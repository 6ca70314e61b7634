package dashboard

import (
	"net/http"
	"strconv"
	"strings"

	"mailroom/internal/analytics"
	"mailroom/internal/domains"
	"mailroom/internal/policy"
	"mailroom/internal/sending"
)

// chartDays is the overview's range: the last 30 days, today included.
const chartDays = 30

// barWidth is one day's slot in the 300-unit-wide chart (30 days × 10).
const barWidth = 10

// bar is one day of a metric's chart, its height already scaled to the
// chart's 40-unit height (the SVG is drawn by the template, no script).
type bar struct {
	Day   string
	X, Y  int
	H     int
	Label string
}

// metric is one series of the overview: its 30 days and its total.
type metric struct {
	Name, Class string // the class colours the bars
	Total       int64
	Bars        []bar
}

type overviewView struct {
	Paused    *policy.Hold // nil: not paused
	Throttled *policy.Hold // nil: not throttled
	Quiet     bool         // the workspace has sent nothing in the range
	Totals    analytics.Counts
	Rates     analytics.Rates
	Metrics   []metric
	From, To  string
	// The first steps, shown until each is done (workspace-wide keys only).
	Steps                                    bool // the checklist is shown
	Domain, Sent, Audience, Webhook, AllDone bool
	Curl                                     string // the exact test send
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
		v.Metrics = metrics(rep.Series)
		if err := x.firstSteps(r, s, &v); err != nil {
			return err
		}
	}
	x.render(w, r, s, http.StatusOK, "overview", v)
	return nil
}

// firstSteps ticks what the workspace has done: a verified domain, an
// email sent, an audience, a webhook endpoint.
func (x *Dashboard) firstSteps(r *http.Request, s *session, v *overviewView) error {
	ctx, wsID := r.Context(), s.key.WorkspaceID
	ds, err := x.d.Domains.List(ctx, wsID)
	if err != nil {
		return err
	}
	for _, d := range ds {
		v.Domain = v.Domain || (d.Status == domains.StatusVerified && !d.Shared) // the workspace subdomain is given, not verified by the user
	}
	sent, err := x.d.Sending.List(ctx, sending.CallerFor(s.key), 1, nil)
	if err != nil {
		return err
	}
	as, err := x.d.Contacts.Audiences(ctx, wsID)
	if err != nil {
		return err
	}
	hooks, err := x.d.Webhooks.List(ctx, wsID, "")
	if err != nil {
		return err
	}
	v.Sent, v.Audience, v.Webhook = len(sent) > 0, len(as) > 0, len(hooks) > 0
	v.AllDone = v.Domain && v.Sent && v.Audience && v.Webhook
	v.Steps = !v.AllDone
	from := x.d.Sending.SandboxFrom()
	_, host, _ := strings.Cut(from, "@")
	base := strings.TrimRight(x.d.PublicURL, "/")
	if base == "" {
		base = "http://" + r.Host
	}
	v.Curl = "curl " + base + "/v1/emails \\\n  -H \"Authorization: Bearer $MAILROOM_API_KEY\" \\\n  -H \"Content-Type: application/json\" \\\n" +
		"  -d '{\"from\": \"" + from + "\", \"to\": \"delivered@" + host + "\", \"subject\": \"Hello from Mailroom\", \"text\": \"It works.\"}'"
	return nil
}

// metrics are the overview's six series, each scaled to its own highest day.
func metrics(series []analytics.Period) []metric {
	defs := []struct {
		name, class string
		get         func(analytics.Counts) int64
	}{
		{"Sent", "a", func(c analytics.Counts) int64 { return c.Sent }},
		{"Delivered", "b", func(c analytics.Counts) int64 { return c.Delivered }},
		{"Bounced", "c", func(c analytics.Counts) int64 { return c.Bounced }},
		{"Complained", "d", func(c analytics.Counts) int64 { return c.Complained }},
		{"Opened", "a", func(c analytics.Counts) int64 { return c.Opens }},
		{"Clicked", "b", func(c analytics.Counts) int64 { return c.Clicks }},
	}
	out := make([]metric, 0, len(defs))
	for _, d := range defs {
		m := metric{Name: d.name, Class: d.class, Bars: make([]bar, len(series))}
		var top int64
		for _, p := range series {
			n := d.get(p.Counts)
			m.Total += n
			top = max(top, n)
		}
		for i, p := range series {
			n := d.get(p.Counts)
			h := 0
			if top > 0 && n > 0 {
				h = max(1, int(n*40/top)) // a day with anything shows
			}
			m.Bars[i] = bar{Day: p.Start, X: i*barWidth + 1, Y: 40 - h, H: h, Label: strconv.FormatInt(n, 10) + " " + strings.ToLower(d.name)}
		}
		out = append(out, m)
	}
	return out
}
