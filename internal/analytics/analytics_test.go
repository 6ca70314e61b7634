package analytics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"mailroom/internal/analytics"
	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

var now = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

func add(t *testing.T, db *store.DB, ws string, at time.Time, d analytics.Dims, c analytics.Counts) {
	t.Helper()
	if err := db.InTx(context.Background(), func(tx *store.Tx) error {
		analytics.Add(tx, ws, at, d, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRollupsSumAndFilter: counts added in transactions are summed per
// day and dimension; reports filter, group and break down from the rows.
func TestRollupsSumAndFilter(t *testing.T) {
	db := testdb.Open(t)
	ctx := context.Background()
	svc := analytics.New(db, clock.NewFake(now))
	a := analytics.Dims{Domain: "A.example", TemplateID: "tpl_1", Tags: map[string]string{"campaign": "spring", "plan": "pro"}}
	b := analytics.Dims{Domain: "b.example", MailClass: analytics.Marketing, Tags: map[string]string{"campaign": "fall"}}
	for i := 0; i < 3; i++ {
		add(t, db, "ws1", now, a, analytics.Counts{Sent: 1, Delivered: 1})
	}
	add(t, db, "ws1", now.AddDate(0, 0, -1), b, analytics.Counts{Sent: 2, Bounced: 1, Delivered: 1})
	add(t, db, "ws1", now, a, analytics.Counts{Opens: 2, UniqueOpens: 1, MachineOpens: 5})
	add(t, db, "ws2", now, a, analytics.Counts{Sent: 100}) // another workspace

	// Several Adds in one transaction, one rewound (a failed write of a
	// group commit): only the kept one counts.
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		analytics.Add(tx, "ws1", now, a, analytics.Counts{Clicks: 1, UniqueClicks: 1})
		m := tx.Mark()
		analytics.Add(tx, "ws1", now, a, analytics.Counts{Clicks: 40})
		tx.Rewind(m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	rep, err := svc.Report(ctx, analytics.Query{WorkspaceID: "ws1", From: "2026-03-01", To: "2026-03-10"})
	if err != nil {
		t.Fatal(err)
	}
	want := analytics.Counts{Sent: 5, Delivered: 4, Bounced: 1, Opens: 2, UniqueOpens: 1, MachineOpens: 5, Clicks: 1, UniqueClicks: 1}
	if rep.Totals != want {
		t.Fatalf("totals %+v, want %+v", rep.Totals, want)
	}
	if len(rep.Series) != 10 || rep.Series[8].Counts.Sent != 2 || rep.Series[9].Counts.Sent != 3 || rep.Series[0].Start != "2026-03-01" {
		t.Fatalf("series %+v", rep.Series)
	}
	if r := rep.Totals.Rates(); *r.Delivery != 0.8 || *r.Bounce != 0.2 || *r.Open != 0.25 {
		t.Fatalf("rates %+v", r)
	}

	cases := []struct {
		name string
		q    analytics.Query
		sent int64
		by   map[string]int64
	}{
		{"domain filter", analytics.Query{Domain: "a.example"}, 3, nil},
		{"class filter", analytics.Query{MailClass: "marketing"}, 2, nil},
		{"template filter", analytics.Query{TemplateID: "tpl_1"}, 3, nil},
		{"tag filter", analytics.Query{Tag: "campaign:fall"}, 2, nil},
		{"tag breakdown", analytics.Query{Breakdown: "tag", TagKey: "campaign"}, 5, map[string]int64{"spring": 3, "fall": 2}},
		{"domain breakdown", analytics.Query{Breakdown: "domain"}, 5, map[string]int64{"a.example": 3, "b.example": 2}},
		{"class breakdown", analytics.Query{Breakdown: "mail_class"}, 5, map[string]int64{"transactional": 3, "marketing": 2}},
		{"template breakdown", analytics.Query{Breakdown: "template", Domain: "b.example"}, 2, map[string]int64{"": 2}},
		{"tag filter and own key", analytics.Query{Tag: "plan:pro", Breakdown: "tag", TagKey: "plan"}, 3, map[string]int64{"pro": 3}},
		{"week", analytics.Query{GroupBy: "week"}, 5, nil},
	}
	for _, c := range cases {
		c.q.WorkspaceID, c.q.From, c.q.To = "ws1", "2026-03-01", "2026-03-10"
		rep, err := svc.Report(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rep.Totals.Sent != c.sent {
			t.Errorf("%s: sent %d, want %d", c.name, rep.Totals.Sent, c.sent)
		}
		if c.by != nil {
			got := map[string]int64{}
			for _, it := range rep.Breakdown.Items {
				got[it.Value] = it.Counts.Sent
			}
			if len(got) != len(c.by) {
				t.Errorf("%s: breakdown %v, want %v", c.name, got, c.by)
			}
			for k, v := range c.by {
				if got[k] != v {
					t.Errorf("%s: breakdown %v, want %v", c.name, got, c.by)
				}
			}
		}
	}
	// 2026-03-01 is a Sunday: weeks start on Mondays, the first one at from.
	rep, _ = svc.Report(ctx, analytics.Query{WorkspaceID: "ws1", From: "2026-03-01", To: "2026-03-10", GroupBy: "week"})
	if len(rep.Series) != 3 || rep.Series[1].Start != "2026-03-02" || rep.Series[2].Start != "2026-03-09" || rep.Series[2].Counts.Sent != 5 {
		t.Fatalf("weeks %+v", rep.Series)
	}
	rep, _ = svc.Report(ctx, analytics.Query{WorkspaceID: "ws1", From: "2026-01-15", To: "2026-03-10", GroupBy: "month"})
	if len(rep.Series) != 3 || rep.Series[0].Start != "2026-01-15" || rep.Series[2].Start != "2026-03-01" {
		t.Fatalf("months %+v", rep.Series)
	}

	keys, err := svc.TagKeys(ctx, "ws1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != (analytics.TagKey{Key: "campaign", Sent: 5}) || keys[1] != (analytics.TagKey{Key: "plan", Sent: 3}) {
		t.Fatalf("tag keys %+v", keys)
	}
}

// TestReportRefusesBadQueries: every bad parameter is a 400 naming it.
func TestReportRefusesBadQueries(t *testing.T) {
	svc := analytics.New(testdb.Open(t), clock.NewFake(now))
	for _, q := range []analytics.Query{
		{From: "2026-13-01"},
		{To: "yesterday"},
		{From: "2026-03-10", To: "2026-03-01"},
		{From: "2025-02-03", To: "2026-03-10"}, // 401 days
		{GroupBy: "year"},
		{Breakdown: "country"},
		{Breakdown: "tag"},
		{TagKey: "campaign"},
		{MailClass: "bulk"},
		{Tag: "campaign"},
		{Tag: ":x"},
		{Tag: "a:b", Breakdown: "tag", TagKey: "c"},
	} {
		q.WorkspaceID = "ws1"
		_, err := svc.Report(context.Background(), q)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Status != 400 {
			t.Errorf("%+v: %v, want a 400", q, err)
		}
	}
	if _, err := svc.Report(context.Background(), analytics.Query{WorkspaceID: "ws1", From: "2025-02-04", To: "2026-03-10"}); err != nil {
		t.Errorf("400 days: %v", err)
	}
	for _, d := range []int{-1, 401} {
		if _, err := svc.TagKeys(context.Background(), "ws1", d); err == nil {
			t.Errorf("days %d accepted", d)
		}
	}
}
