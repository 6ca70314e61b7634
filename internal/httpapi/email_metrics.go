package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"mailroom/internal/analytics"
	"mailroom/internal/apierr"
)

// GET /v1/emails/metrics, the Resend SDKs' emails.metrics, answered from
// the same daily rollups as GET /v1/analytics: totals over a range of UTC
// days and, with dimensions=period, one row per day, week or month. What
// the rollups do not keep (hourly buckets, time zones, per-email or
// per-broadcast rows, unsubscribes, delays) is refused by name.

type emailMetricsJSON struct {
	Object      string             `json:"object"` // metrics
	StartDate   string             `json:"start_date"`
	EndDate     string             `json:"end_date"`
	Metrics     []string           `json:"metrics"`
	Dimensions  []string           `json:"dimensions"`
	Granularity string             `json:"granularity"`
	Totals      map[string]float64 `json:"totals"`
	Data        []map[string]any   `json:"data,omitempty"`
}

// emailMetrics are the metrics the rollups hold, in Resend's names.
var emailMetrics = []string{"sent", "delivered", "bounced", "complained", "opened", "unique_opened", "clicked", "unique_clicked",
	"delivery_rate", "bounce_rate", "complaint_rate", "open_rate", "click_rate"}

var emailMetricsParams = []string{"start_date", "end_date", "timezone", "granularity", "metrics", "dimensions", "domain_id", "email_id", "broadcast_id"}

func metricValues(c analytics.Counts, want []string) map[string]float64 {
	r := c.Rates()
	all := map[string]float64{"sent": float64(c.Sent), "delivered": float64(c.Delivered), "bounced": float64(c.Bounced),
		"complained": float64(c.Complained), "opened": float64(c.Opens), "unique_opened": float64(c.UniqueOpens),
		"clicked": float64(c.Clicks), "unique_clicked": float64(c.UniqueClicks)}
	for k, v := range map[string]*float64{"delivery_rate": r.Delivery, "bounce_rate": r.Bounce, "complaint_rate": r.Complaint,
		"open_rate": r.Open, "click_rate": r.Click} {
		if v != nil { // no denominator: no rate
			all[k] = *v
		}
	}
	out := map[string]float64{}
	for _, m := range want {
		if v, ok := all[m]; ok {
			out[m] = v
		}
	}
	return out
}

// metricsDay reads an ISO 8601 date or date-time as its UTC day.
func metricsDay(name, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC().Format(time.DateOnly), nil
	}
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return s, nil
	}
	return "", apierr.InvalidRequest("%s %q is not an ISO 8601 date (YYYY-MM-DD) or date-time.", name, clipParam(s))
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (h *handler) getEmailMetrics(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, emailMetricsParams); err != nil {
		return err
	}
	q := r.URL.Query()
	for _, p := range []string{"domain_id", "email_id", "broadcast_id"} {
		if q.Get(p) != "" {
			return apierr.InvalidRequest("%s is not offered: the rollups are kept per day, not per domain id, email or broadcast.", p).
				WithNext("GET /v1/analytics?breakdown=domain breaks the counts down by sending domain.")
		}
	}
	if tz := q.Get("timezone"); tz != "" && tz != "UTC" && tz != "Etc/UTC" {
		return apierr.InvalidRequest("timezone %q is not offered: the rollups are kept per UTC day.", clipParam(tz))
	}
	groupBy := map[string]string{"": analytics.GroupByDay, "daily": analytics.GroupByDay, "weekly": analytics.GroupByWeek, "monthly": analytics.GroupByMonth}
	gran := q.Get("granularity")
	gb, ok := groupBy[gran]
	if !ok {
		return apierr.InvalidRequest("granularity %q is not one of daily, weekly, monthly (hourly is not kept).", clipParam(gran))
	}
	if gran == "" {
		gran = "daily"
	}
	dims := splitList(q.Get("dimensions"))
	for _, d := range dims {
		if d != "period" {
			return apierr.InvalidRequest("dimension %q is not offered; period is.", clipParam(d))
		}
	}
	want := splitList(q.Get("metrics"))
	for _, m := range want {
		if !slices.Contains(emailMetrics, m) {
			return apierr.InvalidRequest("metric %q is not kept; the metrics are %s.", clipParam(m), strings.Join(emailMetrics, ", "))
		}
	}
	if len(want) == 0 {
		want = emailMetrics
	}
	from, err := metricsDay("start_date", q.Get("start_date"))
	if err != nil {
		return err
	}
	to, err := metricsDay("end_date", q.Get("end_date"))
	if err != nil {
		return err
	}
	if from == "" { // Resend's default: the 6 days before end_date, and that day
		end := h.d.Clock.Now().UTC()
		if to != "" {
			end, _ = time.Parse(time.DateOnly, to)
		}
		from = end.AddDate(0, 0, -6).Format(time.DateOnly)
	}
	rep, err := h.d.Services.Analytics.Report(r.Context(), analytics.Query{WorkspaceID: apiKey(r).WorkspaceID, From: from, To: to, GroupBy: gb})
	if err != nil {
		return err
	}
	out := emailMetricsJSON{Object: "metrics", StartDate: rep.From, EndDate: rep.To, Metrics: want, Dimensions: []string{},
		Granularity: gran, Totals: metricValues(rep.Totals, want)}
	if len(dims) > 0 {
		out.Dimensions = []string{"period"}
		out.Data = []map[string]any{}
		for _, p := range rep.Series {
			row := map[string]any{"period": p.Start}
			for k, v := range metricValues(p.Counts, want) {
				row[k] = v
			}
			out.Data = append(out.Data, row)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
