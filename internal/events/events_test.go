package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/ids"
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

// An event raised with DataIsEmail stores no data, and every read (the
// timeline, the webhook envelope, the stream and replays) answers exactly
// what the same event raised with its data written out answers.
func TestEventDataFromEmailRow(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t)
	events.UseListeners(webhooks.Listening)
	for _, tc := range []struct {
		id, from, to, subject, tags string
		testMode                    bool
	}{
		{"em_plain", `"News" <news@acme.example>`, `["m1@example.net"]`, "News for Ann", `{"broadcast_id":"bc_1"}`, false},
		{"em_odd", "Ünïcode <a@b.example>", `["A <x@y.example>","z@y.example"]`, "Hi \"you\" <3 & \u2028", `{"z":"1","a":"<&>"}`, true},
		{"em_none", "a@b.example", `[]`, "", `{}`, false},
		{ids.At("em", time.UnixMilli(1795971816740)), `"News" <news@acme.example>`, `["m1@example.net"]`, "News for Ann", `{"broadcast_id":"bc_1"}`, false},
		{ids.New("em"), "a@b.example", `["m2@example.net"]`, "x", `{}`, true},
	} {
		if _, err := db.W.ExecContext(ctx, db.Rebind(`INSERT INTO emails (id, workspace_id, status, from_addr, to_addrs, subject, tags, test_mode, created_at, updated_at)
			VALUES (?, 'ws_1', 'delivered', ?, ?, ?, ?, ?, 1, 1)`), tc.id, tc.from, tc.to, tc.subject, tc.tags, store.BoolInt(tc.testMode)); err != nil {
			t.Fatal(err)
		}
		var to []string
		var tags map[string]string
		_ = json.Unmarshal([]byte(tc.to), &to)
		_ = json.Unmarshal([]byte(tc.tags), &tags)
		at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		var written, derived events.Event
		err := db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			data := events.EmailData(tc.id, tc.from, to, tc.subject, tags, tc.testMode)
			if written, err = events.Raise(ctx, tx, events.Event{WorkspaceID: "ws_1", EmailID: tc.id, Type: events.EmailSent, CreatedAt: at, Data: data}); err != nil {
				return err
			}
			derived, err = events.Raise(ctx, tx, events.Event{WorkspaceID: "ws_1", EmailID: tc.id, Type: events.EmailSent, CreatedAt: at, Data: data, DataIsEmail: true})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The stream and the replays of one email.
		one, err := events.WebhookEventsOfEmail(ctx, db, "ws_1", tc.id, 10)
		if err != nil || len(one) != 2 {
			t.Fatalf("%s: WebhookEventsOfEmail = %d events (%v)", tc.id, len(one), err)
		}
		// Stored in brief: no data, no workspace, and no id when the email's
		// id is a minted one (the event's id is derived from it).
		var stored, storedID, storedWS, storedType string
		if err := db.QueryRow(ctx, `SELECT data, id, workspace_id, type FROM events WHERE seq = ?`, one[1].Seq).Scan(&stored, &storedID, &storedWS, &storedType); err != nil || stored != "" || storedWS != "" {
			t.Fatalf("%s: stored data %q, workspace %q (%v), want none", tc.id, stored, storedWS, err)
		}
		if minted := len(tc.id) == 29; minted != (storedID == "") || minted != (storedType == "") || derived.ID == "" || derived.ID == written.ID {
			t.Errorf("%s: stored id %q and type %q, raised %q (written %q)", tc.id, storedID, storedType, derived.ID, written.ID)
		}
		if one[0].ID != written.ID || one[1].ID != derived.ID || one[1].Type != events.EmailSent {
			t.Errorf("%s: ids read %s %s, raised %s %s", tc.id, one[0].ID, one[1].ID, written.ID, derived.ID)
		}
		// Found by its id (a manual replay, the dashboard's link to the
		// email) in its workspace only.
		for _, ev := range []events.Event{written, derived} {
			var seq int64
			if err := events.WebhookSeq(ctx, db, "ws_1", ev.ID, &seq); err != nil || (seq != one[0].Seq && seq != one[1].Seq) {
				t.Errorf("%s: WebhookSeq(%s) = %d (%v)", tc.id, ev.ID, seq, err)
			}
			if err := events.WebhookSeq(ctx, db, "ws_2", ev.ID, &seq); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: WebhookSeq(%s) of another workspace: %v", tc.id, ev.ID, err)
			}
		}
		if of, err := events.EmailsOf(ctx, db, "ws_1", []string{written.ID, derived.ID, "whd_0000000000000000000000000"}); err != nil || len(of) != 2 || of[derived.ID] != tc.id || of[written.ID] != tc.id {
			t.Errorf("%s: EmailsOf = %v (%v)", tc.id, of, err)
		}
		if of, err := events.EmailsOf(ctx, db, "ws_2", []string{written.ID, derived.ID}); err != nil || len(of) != 0 {
			t.Errorf("%s: EmailsOf of another workspace = %v (%v)", tc.id, of, err)
		}
		if other, err := events.WebhookEventsOfEmail(ctx, db, "ws_2", tc.id, 10); err != nil || len(other) != 0 {
			t.Errorf("%s: another workspace's replay of the email = %d events (%v)", tc.id, len(other), err)
		}
		all, err := events.WebhookEventsIn(ctx, db, "ws_1", one[0].Seq-1, one[1].Seq, 10)
		if err != nil || len(all) != 2 {
			t.Fatalf("%s: WebhookEventsIn = %d events (%v)", tc.id, len(all), err)
		}
		for _, pair := range [][]events.Stored{one, all} {
			if string(pair[1].Data) != string(pair[0].Data) {
				t.Errorf("%s: derived data %s\nwritten data %s", tc.id, pair[1].Data, pair[0].Data)
			}
		}
		// The dispatcher's envelopes, the id aside.
		bodies := map[string]string{}
		if err := events.Envelopes(ctx, db, []any{one[0].Seq, one[1].Seq}, func(id, _ string, body []byte) {
			bodies[id] = strings.Replace(string(body), id, "whd_X", 1)
		}); err != nil {
			t.Fatal(err)
		}
		if bodies[derived.ID] == "" || bodies[derived.ID] != bodies[written.ID] {
			t.Errorf("%s: derived envelope %s\nwritten envelope %s", tc.id, bodies[derived.ID], bodies[written.ID])
		}
		// The timeline of GET /v1/emails/{id} and of a list page.
		line, err := events.Timeline(ctx, db, "ws_1", tc.id)
		if err != nil || len(line) != 2 {
			t.Fatalf("%s: Timeline = %d events (%v)", tc.id, len(line), err)
		}
		lines, err := events.Timelines(ctx, db, "ws_1", []string{tc.id})
		if err != nil || len(lines[tc.id]) != 2 {
			t.Fatalf("%s: Timelines = %d events (%v)", tc.id, len(lines[tc.id]), err)
		}
		for _, l := range [][]events.Event{line, lines[tc.id]} {
			if l[0].ID != written.ID || l[1].ID != derived.ID || l[1].WorkspaceID != "ws_1" {
				t.Errorf("%s: timeline ids %s %s, raised %s %s", tc.id, l[0].ID, l[1].ID, written.ID, derived.ID)
			}
			w, _ := json.Marshal(l[0].Data)
			d, _ := json.Marshal(l[1].Data)
			if string(d) != string(w) || string(d) != string(one[0].Data) {
				t.Errorf("%s: timeline derived data %s\nwritten data %s", tc.id, d, w)
			}
		}
	}
}
