package sending_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testapp"
)

func schedule(t *testing.T, a *testapp.App, key string, body any) string {
	t.Helper()
	m := mustStatus(t, a.DoKey(key, http.MethodPost, "/v1/emails", body), http.StatusAccepted)
	if m["status"] != "scheduled" {
		t.Fatalf("%v", m)
	}
	return m["id"].(string)
}

// TestRescheduleAndCancel covers PATCH, POST .../cancel and DELETE
// /v1/messages/scheduled/{id} with their 200, 400, 404 and 409 answers.
func TestRescheduleAndCancel(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	id := schedule(t, a, a.Key, msg("send_at", "in 1 hour"))
	e := getEmail(t, a, id)
	if e["status"] != "scheduled" || e["scheduled_at"] == nil || e["last_event"] != "email.scheduled" {
		t.Fatalf("%v", e)
	}

	at := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Second)
	r := mustStatus(t, a.Do(http.MethodPatch, "/v1/emails/"+id, map[string]string{"send_at": at.Format(time.RFC3339)}), http.StatusOK)
	if r["id"] != id || r["status"] != "scheduled" || r["scheduled_at"] != at.Format(time.RFC3339) {
		t.Fatalf("%v", r)
	}
	if got := getEmail(t, a, id)["scheduled_at"]; got != at.Format(time.RFC3339) {
		t.Fatalf("scheduled_at %v", got)
	}

	now := send(t, a, msg())
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	for _, tt := range []struct {
		name, key, id string
		body          any
		status        int
		code          string
	}{
		{"missing send_at", a.Key, id, map[string]any{}, 400, "invalid_request"},
		{"unknown field", a.Key, id, map[string]any{"send_at": "in 1 hour", "x": 1}, 400, "invalid_request"},
		{"unparseable", a.Key, id, map[string]any{"send_at": "soonish"}, 400, "send_at_invalid"},
		{"past", a.Key, id, map[string]any{"send_at": "2000-01-01T00:00:00Z"}, 400, "send_at_in_past"},
		{"too far", a.Key, id, map[string]any{"send_at": "in 40 days"}, 400, "send_at_too_far"},
		{"unknown id", a.Key, "em_nope", map[string]any{"send_at": "in 1 hour"}, 404, "not_found"},
		{"not a scheduled email", a.Key, now, map[string]any{"send_at": "in 1 hour"}, 404, "not_found"},
		{"other workspace", otherKey, id, map[string]any{"send_at": "in 1 hour"}, 404, "not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := a.DoKey(tt.key, http.MethodPatch, "/v1/emails/"+tt.id, tt.body)
			if r.Status != tt.status || r.ErrCode() != tt.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}

	// Cancel, then cancel again (same answer), then it cannot move.
	for range 2 {
		r := mustStatus(t, a.Do(http.MethodPost, "/v1/emails/"+id+"/cancel", nil), http.StatusOK)
		if r["id"] != id || r["status"] != "cancelled" {
			t.Fatalf("%v", r)
		}
	}
	if e := getEmail(t, a, id); e["status"] != "cancelled" || e["last_event"] != "email.cancelled" {
		t.Fatalf("%v", e)
	}
	if r := a.Do(http.MethodPatch, "/v1/emails/"+id, map[string]string{"send_at": "in 1 hour"}); r.Status != 409 || r.ErrCode() != "too_late_to_reschedule" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	for _, tt := range []struct {
		key, id string
	}{{a.Key, "em_nope"}, {a.Key, now}, {otherKey, id}} {
		if r := a.DoKey(tt.key, http.MethodPost, "/v1/emails/"+tt.id+"/cancel", nil); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Fatalf("cancel %s: %d %s", tt.id, r.Status, r.Body)
		}
		if r := a.DoKey(tt.key, http.MethodDelete, "/v1/messages/scheduled/"+tt.id, nil); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Fatalf("delete %s: %d %s", tt.id, r.Status, r.Body)
		}
	}

	// The older spelling.
	id2 := schedule(t, a, a.Key, msg("send_at", "in 2 hours"))
	r = mustStatus(t, a.Do(http.MethodDelete, "/v1/messages/scheduled/"+id2, nil), http.StatusOK)
	if r["scheduled_id"] != id2 || r["cancelled"] != true {
		t.Fatalf("%v", r)
	}

	// Once on its way: too late, and the DELETE variant carries the status.
	id3 := schedule(t, a, a.Key, msg("send_at", time.Now().UTC().Add(1500*time.Millisecond).Format(time.RFC3339Nano)))
	waitStatus(t, a, id3, "delivered", 10*time.Second)
	if r := a.Do(http.MethodPost, "/v1/emails/"+id3+"/cancel", nil); r.Status != 409 || r.ErrCode() != "too_late_to_cancel" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := a.Do(http.MethodPatch, "/v1/emails/"+id3, map[string]string{"send_at": "in 1 hour"}); r.Status != 409 || r.ErrCode() != "too_late_to_reschedule" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r2 := a.Do(http.MethodDelete, "/v1/messages/scheduled/"+id3, nil)
	m := r2.JSON()
	if r2.Status != 409 || r2.ErrCode() != "too_late_to_cancel" || m["scheduled_id"] != id3 || m["status"] != "delivered" || m["cancelled"] != false {
		t.Fatalf("%d %s", r2.Status, r2.Body)
	}
}

// TestScheduledBelongsToWorkspace: a booking belongs to the workspace, not
// to the key that made it: another mail:send key of the workspace
// reschedules and cancels it (in both spellings), while a key of another
// workspace gets 404 and the booking stays as it was.
func TestScheduledBelongsToWorkspace(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	sendKey := func() string {
		m := mustStatus(t, a.Do(http.MethodPost, "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}}), http.StatusCreated)
		return m["key"].(string)
	}
	booker, other := sendKey(), sendKey()
	_, foreign := a.NewWorkspace("Other", "other@example.com")
	ids := []string{schedule(t, a, booker, msg("send_at", "in 1 hour")), schedule(t, a, booker, msg("send_at", "in 1 hour"))}
	at := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Second).Format(time.RFC3339)

	for _, id := range ids {
		if r := a.DoKey(foreign, http.MethodPatch, "/v1/emails/"+id, map[string]string{"send_at": at}); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Fatalf("foreign reschedule: %d %s", r.Status, r.Body)
		}
		if r := a.DoKey(foreign, http.MethodPost, "/v1/emails/"+id+"/cancel", nil); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Fatalf("foreign cancel: %d %s", r.Status, r.Body)
		}
		if r := a.DoKey(foreign, http.MethodDelete, "/v1/messages/scheduled/"+id, nil); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Fatalf("foreign delete: %d %s", r.Status, r.Body)
		}
		if e := getEmail(t, a, id); e["status"] != "scheduled" {
			t.Fatalf("after foreign attempts: %v", e)
		}
	}
	r := mustStatus(t, a.DoKey(other, http.MethodPatch, "/v1/emails/"+ids[0], map[string]string{"send_at": at}), http.StatusOK)
	if r["scheduled_at"] != at || getEmail(t, a, ids[0])["scheduled_at"] != at {
		t.Fatalf("reschedule by another key: %v", r)
	}
	if r := mustStatus(t, a.DoKey(other, http.MethodPost, "/v1/emails/"+ids[0]+"/cancel", nil), http.StatusOK); r["status"] != "cancelled" {
		t.Fatalf("cancel by another key: %v", r)
	}
	if r := mustStatus(t, a.DoKey(other, http.MethodDelete, "/v1/messages/scheduled/"+ids[1], nil), http.StatusOK); r["cancelled"] != true {
		t.Fatalf("delete by another key: %v", r)
	}
	for _, id := range ids {
		if e := getEmail(t, a, id); e["status"] != "cancelled" {
			t.Fatalf("%s: %v", id, e)
		}
	}
}

// TestScheduledSendGoesOnTime: a send booked two seconds ahead is sent
// within about two seconds of its time.
func TestScheduledSendGoesOnTime(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	at := time.Now().UTC().Add(2 * time.Second)
	id := schedule(t, a, a.Key, msg("send_at", at.Format(time.RFC3339Nano)))
	e := waitStatus(t, a, id, "delivered", 10*time.Second)
	checkOnTime(t, e, at)
}

func checkOnTime(t *testing.T, e map[string]any, at time.Time) {
	t.Helper()
	for _, ev := range e["events"].([]any) {
		ev := ev.(map[string]any)
		if ev["type"] != "email.sent" {
			continue
		}
		sent, err := time.Parse(time.RFC3339Nano, ev["at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		late := sent.Sub(at)
		t.Logf("sent %v after its time", late)
		if late < -50*time.Millisecond || late > 2500*time.Millisecond {
			t.Fatalf("sent %v after its time", late)
		}
		return
	}
	t.Fatal("no email.sent")
}

// TestScheduledSendSurvivesRestart: node A books a send for three seconds
// ahead and stops; node B on the same database sends it on time.
func TestScheduledSendSurvivesRestart(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	at := time.Now().UTC().Add(3 * time.Second)
	id := schedule(t, a, a.Key, msg("send_at", at.Format(time.RFC3339Nano)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b := testapp.Start(t, testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]))
	var e map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		e = mustStatus(t, b.DoKey(a.Key, http.MethodGet, "/v1/emails/"+id, nil), http.StatusOK)
		return e["status"] == "delivered"
	}, "never delivered after restart")
	checkOnTime(t, e, at)
}

// TestScheduledSuppressionCheckedWhenDue: suppression is checked when the
// time comes, not at booking; a send whose every recipient is suppressed by
// then fails with email.bounced (bounce_subtype suppressed).
func TestScheduledSuppressionCheckedWhenDue(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	a.Sending().SetDomains(domainsTable{a.WorkspaceID + "/acme.example": "verified"})
	if _, _, err := suppressions.AddGlobal(context.Background(), a.DB, "early@else.example", suppressions.ReasonManual, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Booking a suppressed address is accepted: the list is read at send time.
	id := schedule(t, a, a.Key, msg("from", "hi@acme.example", "to", "early@else.example", "send_at", time.Now().UTC().Add(time.Second).Format(time.RFC3339Nano)))
	e := waitStatus(t, a, id, "failed", 10*time.Second)
	last := e["events"].([]any)[len(e["events"].([]any))-1].(map[string]any)
	if last["type"] != "email.bounced" || last["data"].(map[string]any)["bounce_subtype"] != "suppressed" || e["last_error"] == nil {
		t.Fatalf("%v", e)
	}
}
