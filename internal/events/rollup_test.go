package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"mailroom/internal/analytics"
	"mailroom/internal/clock"
	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// TestRaiseCountsEmailEvents: the rollups move in the raising transaction,
// per recipient; a bounce after delivery adds no send; test sends and
// timeline entries never count.
func TestRaiseCountsEmailEvents(t *testing.T) {
	db := testdb.Open(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
	data := func(to ...string) map[string]any {
		return events.EmailData("em_1", "Acme <hi@Acme.example>", to, "s", map[string]string{"campaign": "spring"}, false)
	}
	raw, _ := events.EmailDataJSON("em_2", "hi@acme.example", []string{"delivered@mailroom.test"}, "s", nil, true)
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for _, ev := range []events.Event{
			{Type: events.EmailSent, Data: data("a@x.example", "b@x.example"), TemplateID: "tpl_1"},
			{Type: events.EmailDelivered, Data: data("a@x.example", "b@x.example"), TemplateID: "tpl_1"},
			{Type: events.EmailBounced, Data: data("c@x.example"), TemplateID: "tpl_1"},
			{Type: events.EmailBounced, Data: data("a@x.example"), TemplateID: "tpl_1", AfterDelivery: true},
			{Type: events.EmailComplained, Data: data("b@x.example"), TemplateID: "tpl_1"},
			{Type: events.EmailDeferred, Data: data("d@x.example")},
			{Type: events.EmailSent, Data: events.EmailData("em_3", "hi@acme.example", []string{"delivered@mailroom.test"}, "s", nil, true)},
			{Type: events.EmailSent, RawData: raw},
		} {
			ev.WorkspaceID, ev.EmailID, ev.CreatedAt = "ws1", "em_1", at
			if _, err := events.Raise(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analytics.New(db, clock.NewFake(at)).Report(ctx, analytics.Query{WorkspaceID: "ws1", From: "2026-03-10", To: "2026-03-10", Breakdown: "template"})
	if err != nil {
		t.Fatal(err)
	}
	want := analytics.Counts{Sent: 3, Delivered: 2, Bounced: 2, Complained: 1}
	if rep.Totals != want {
		b, _ := json.Marshal(rep.Totals)
		t.Fatalf("totals %s, want %+v", b, want)
	}
	if len(rep.Breakdown.Items) != 1 || rep.Breakdown.Items[0].Value != "tpl_1" {
		t.Fatalf("breakdown %+v", rep.Breakdown.Items)
	}
	dom, _ := analytics.New(db, clock.NewFake(at)).Report(ctx, analytics.Query{WorkspaceID: "ws1", From: "2026-03-10", To: "2026-03-10", Domain: "acme.example", Tag: "campaign:spring"})
	if dom.Totals != want {
		t.Fatalf("domain and tag filtered totals %+v, want %+v", dom.Totals, want)
	}
}
