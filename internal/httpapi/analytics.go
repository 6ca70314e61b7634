package httpapi

import (
	"net/http"
	"slices"
	"strconv"

	"mailroom/internal/analytics"
	"mailroom/internal/apierr"
)

type analyticsRangeJSON struct {
	From    string `json:"from"`
	To      string `json:"to"`
	GroupBy string `json:"group_by"`
	Days    int    `json:"days"`
}

type ratesJSON struct {
	DeliveryRate  *float64 `json:"delivery_rate"`
	BounceRate    *float64 `json:"bounce_rate"`
	ComplaintRate *float64 `json:"complaint_rate"`
	OpenRate      *float64 `json:"open_rate"`
	ClickRate     *float64 `json:"click_rate"`
}

// engagementJSON are opens and clicks as analytics and broadcast stats
// answer them: people's, and machines' apart.
type engagementJSON struct {
	Opens         int64 `json:"opens"`
	UniqueOpens   int64 `json:"unique_opens"`
	Clicks        int64 `json:"clicks"`
	UniqueClicks  int64 `json:"unique_clicks"`
	MachineOpens  int64 `json:"machine_opens"`
	MachineClicks int64 `json:"machine_clicks"`
}

type countsJSON struct {
	Sends      int64 `json:"sends"`
	Deliveries int64 `json:"deliveries"`
	Bounces    int64 `json:"bounces"`
	Complaints int64 `json:"complaints"`
	engagementJSON
	ratesJSON
}

type periodJSON struct {
	Period string `json:"period"`
	countsJSON
}

type breakdownItemJSON struct {
	Value string `json:"value"`
	countsJSON
}

type breakdownJSON struct {
	By     string              `json:"by"`
	TagKey *string             `json:"tag_key"`
	Items  []breakdownItemJSON `json:"items"`
}

type analyticsJSON struct {
	Range     analyticsRangeJSON `json:"range"`
	Totals    countsJSON         `json:"totals"`
	Series    []periodJSON       `json:"series"`
	Breakdown *breakdownJSON     `json:"breakdown"`
	Notes     []string           `json:"notes"`
}

func countsOut(c analytics.Counts) countsJSON {
	r := c.Rates()
	return countsJSON{Sends: c.Sent, Deliveries: c.Delivered, Bounces: c.Bounced, Complaints: c.Complained,
		engagementJSON: engagementJSON{Opens: c.Opens, UniqueOpens: c.UniqueOpens, Clicks: c.Clicks, UniqueClicks: c.UniqueClicks,
			MachineOpens: c.MachineOpens, MachineClicks: c.MachineClicks},
		ratesJSON: ratesJSON{DeliveryRate: r.Delivery, BounceRate: r.Bounce, ComplaintRate: r.Complaint, OpenRate: r.Open, ClickRate: r.Click}}
}

// analyticsParams are the query parameters GET /v1/analytics reads; any
// other answers 400, so a misspelt filter never widens the answer.
var analyticsParams = []string{"from", "to", "group_by", "breakdown", "tag_key", "mail_class", "domain", "template_id", "tag"}

// onlyParams answers 400 for a query parameter not in known, or one given
// twice.
func onlyParams(r *http.Request, known []string) error {
	for k, v := range r.URL.Query() {
		if !slices.Contains(known, k) {
			return apierr.InvalidRequest("Unknown query parameter %q.", clipParam(k))
		}
		if len(v) > 1 {
			return apierr.InvalidRequest("%s is given %d times; give it once.", k, len(v))
		}
	}
	return nil
}

func clipParam(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (h *handler) getAnalytics(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, analyticsParams); err != nil {
		return err
	}
	q := r.URL.Query()
	rep, err := h.d.Services.Analytics.Report(r.Context(), analytics.Query{
		WorkspaceID: apiKey(r).WorkspaceID,
		From:        q.Get("from"), To: q.Get("to"), GroupBy: q.Get("group_by"),
		Breakdown: q.Get("breakdown"), TagKey: q.Get("tag_key"),
		MailClass: q.Get("mail_class"), Domain: q.Get("domain"), TemplateID: q.Get("template_id"), Tag: q.Get("tag"),
	})
	if err != nil {
		return err
	}
	out := analyticsJSON{
		Range:  analyticsRangeJSON{From: rep.From, To: rep.To, GroupBy: rep.GroupBy, Days: rep.Days},
		Totals: countsOut(rep.Totals),
		Series: make([]periodJSON, len(rep.Series)),
		Notes:  rep.Notes,
	}
	for i, p := range rep.Series {
		out.Series[i] = periodJSON{Period: p.Start, countsJSON: countsOut(p.Counts)}
	}
	if b := rep.Breakdown; b != nil {
		bj := &breakdownJSON{By: b.By, Items: make([]breakdownItemJSON, len(b.Items))}
		if b.TagKey != "" {
			bj.TagKey = &b.TagKey
		}
		for i, it := range b.Items {
			bj.Items[i] = breakdownItemJSON{Value: it.Value, countsJSON: countsOut(it.Counts)}
		}
		out.Breakdown = bj
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type tagKeyJSON struct {
	Key  string `json:"key"`
	Sent int64  `json:"sent"`
}

type tagKeysJSON struct {
	TagKeys []tagKeyJSON `json:"tag_keys"`
}

func (h *handler) getAnalyticsTags(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, []string{"days"}); err != nil {
		return err
	}
	days := 0
	if s := r.URL.Query().Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return apierr.InvalidRequest("days %q must be a whole number from 1 to %d.", clipParam(s), analytics.MaxWindowDays)
		}
		days = n
	}
	keys, err := h.d.Services.Analytics.TagKeys(r.Context(), apiKey(r).WorkspaceID, days)
	if err != nil {
		return err
	}
	out := tagKeysJSON{TagKeys: make([]tagKeyJSON, len(keys))}
	for i, k := range keys {
		out.TagKeys[i] = tagKeyJSON{Key: k.Key, Sent: k.Sent}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
