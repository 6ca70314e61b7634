package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/webhooks"
)

// Webhook events of a workspace with no endpoint are written already
// dispatched (nobody to fan out to); those of a workspace with an endpoint,
// even a disabled one, wait for the dispatcher; timeline-only entries never
// do. One transaction may mix all three.
func TestRaiseMarksOnlyListenedEventsForDispatch(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t)
	events.UseListeners(webhooks.Listening) // as app wires it
	for i, ws := range []string{"ws_hooked", "ws_disabled"} {
		if _, err := db.W.ExecContext(ctx, db.Rebind(`INSERT INTO webhooks (id, workspace_id, url, events, secret, active, accepted_at, created_at, updated_at)
			VALUES (?, ?, 'https://example.com/h', '["email.sent"]', 'x', ?, 1, 1, 1)`), "wh_"+ws, ws, 1-i); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	raised := map[string]string{}
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for _, ws := range []string{"ws_hooked", "ws_quiet", "ws_disabled"} {
			for _, kind := range []string{events.EmailSent, events.EmailAccepted} {
				ev, err := events.Raise(ctx, tx, events.Event{WorkspaceID: ws, EmailID: "em_" + ws, Type: kind, CreatedAt: now})
				if err != nil {
					return err
				}
				raised[ev.ID] = ws + " " + kind
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"ws_hooked " + events.EmailSent: 0, "ws_disabled " + events.EmailSent: 0, "ws_quiet " + events.EmailSent: 1,
		"ws_hooked " + events.EmailAccepted: 1, "ws_disabled " + events.EmailAccepted: 1, "ws_quiet " + events.EmailAccepted: 1,
	}
	for id, what := range raised {
		var dispatched int
		if err := db.QueryRow(ctx, `SELECT dispatched FROM events WHERE id = ?`, id).Scan(&dispatched); err != nil {
			t.Fatal(err)
		}
		if dispatched != want[what] {
			t.Errorf("%s: dispatched = %d, want %d", what, dispatched, want[what])
		}
	}
}

// EmailDataJSON encodes exactly what encoding/json makes of EmailData.
func TestEmailDataJSON(t *testing.T) {
	for _, tc := range []struct {
		to       []string
		tags     map[string]string
		testMode bool
	}{
		{nil, nil, false},
		{[]string{}, map[string]string{}, true},
		{[]string{"A <a@b.c>", "d@e.f"}, map[string]string{"z": "1", "a": "<&>", "m": "\u2028"}, true},
		{[]string{"x@y.z"}, map[string]string{"kind": "receipt"}, false},
	} {
		want, err := json.Marshal(events.EmailData("em_1", "Bench <onboarding@bench.test>", tc.to, "Hi \"you\" <3", tc.tags, tc.testMode))
		if err != nil {
			t.Fatal(err)
		}
		got, err := events.EmailDataJSON("em_1", "Bench <onboarding@bench.test>", tc.to, "Hi \"you\" <3", tc.tags, tc.testMode)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("EmailDataJSON = %s\nencoding/json    %s", got, want)
		}
	}
}

// TestMarshalEnvelope: the envelope is what json.Marshal of an Envelope
// gives for data as Raise stores it (json.Marshal's output).
func TestMarshalEnvelope(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 5e6, time.UTC)
	for _, v := range []any{
		map[string]any{"html": "<p>a & b</p>", "text": "café \u2028 \"quoted\"", "n": 3, "list": []string{"x"}, "none": nil},
		"plain", nil, []any{},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(events.Envelope{ID: "evt_1", Event: "email.received", Timestamp: at.Format(events.TimeFormat), Sequence: 7, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		got, err := events.MarshalEnvelope("evt_1", "email.received", 7, at, data)
		if err != nil || string(got) != string(want) {
			t.Errorf("got  %s (%v)\nwant %s", got, err, want)
		}
	}
}
