package sending_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testapp"
)

// TestTestAddresses plays out each reserved test address end to end: a real
// message id, the spec's events in order with test_mode and tags in data.
func TestTestAddresses(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	tests := []struct {
		to      string
		status  string
		events  []string
		subtype string
	}{
		{"delivered@mailroom.test", "delivered", []string{"email.accepted", "email.sent", "email.delivered"}, ""},
		{"Delivered+signup-42@MAILROOM.test", "delivered", []string{"email.accepted", "email.sent", "email.delivered"}, ""},
		{"bounced@mailroom.test", "bounced", []string{"email.accepted", "email.sent", "email.bounced"}, "mailbox_unavailable"},
		{"suppressed@mailroom.test", "failed", []string{"email.accepted", "email.bounced"}, "suppressed"},
	}
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			id := send(t, a, msg("to", []string{tt.to}, "tags", map[string]string{"kind": "test"}))
			e := waitStatus(t, a, id, tt.status, 10*time.Second)
			if got := eventTypes(e); !slices.Equal(got, tt.events) {
				t.Fatalf("events %v, want %v", got, tt.events)
			}
			// The same stable form the delivery engine gives real mail.
			if e["message_id"] != "<"+id+"@mailroom.test>" || e["test_mode"] != true {
				t.Fatalf("message_id %v test_mode %v", e["message_id"], e["test_mode"])
			}
			for _, ev := range e["events"].([]any) {
				ev := ev.(map[string]any)
				d := ev["data"].(map[string]any)
				if d["test_mode"] != true || d["email_id"] != id || d["tags"].(map[string]any)["kind"] != "test" {
					t.Fatalf("event data %v", d)
				}
				want := map[string]float64{"email.accepted": 1, "email.sent": 2, "email.delivered": 3, "email.bounced": 3}[ev["type"].(string)]
				if ev["sequence"] != want {
					t.Fatalf("%s sequence %v", ev["type"], ev["sequence"])
				}
				if ev["type"] == "email.bounced" && (d["bounce_type"] != "hard" || d["bounce_subtype"] != tt.subtype || d["diagnostic"] == "") {
					t.Fatalf("bounce data %v", d)
				}
			}
			if e["last_event"] != tt.events[len(tt.events)-1] {
				t.Fatalf("last_event %v", e["last_event"])
			}
		})
	}
}

// TestComplainedAddress: delivered first, then a few seconds later
// email.complained (sequence 4) and a suppression row; the address stays
// usable: a second send is accepted and complains again.
func TestComplainedAddress(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	for round := range 2 {
		id := send(t, a, msg("to", "complained@mailroom.test"))
		waitStatus(t, a, id, "delivered", 10*time.Second)
		e := waitStatus(t, a, id, "complained", 20*time.Second)
		if got := eventTypes(e); !slices.Equal(got, []string{"email.accepted", "email.sent", "email.delivered", "email.complained"}) {
			t.Fatalf("send %d: events %v", round+1, got)
		}
		last := e["events"].([]any)[3].(map[string]any)
		if last["sequence"] != float64(4) || last["data"].(map[string]any)["feedback_type"] != "abuse" {
			t.Fatalf("send %d: complaint %v", round+1, last)
		}
		sup, err := suppressions.Suppressed(context.Background(), a.DB, a.WorkspaceID, []string{"complained@mailroom.test"})
		if err != nil || sup["complained@mailroom.test"] != suppressions.ReasonComplaint {
			t.Fatalf("send %d: suppression %v %v", round+1, sup, err)
		}
	}
	// The suppression row is listed for the tester to see, once.
	r := a.Do(http.MethodGet, "/v1/suppressions?email=complained@mailroom.test", nil)
	if r.Status != http.StatusOK || len(r.JSON()["suppressions"].([]any)) != 1 {
		t.Fatalf("suppressions: %d %s", r.Status, r.Body)
	}
}
