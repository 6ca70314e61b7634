package sending_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/wait"
)

// TestBatch: entries succeed or fail on their own, in input order; whole
// request errors; idempotency per entry.
func TestBatch(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	body := map[string]any{"emails": []any{
		msg(),
		msg("to", "stranger@else.example"),
		msg("send_at", "in 1 hour"),
		"not an object",
		msg("idempotency_key", "b-1"),
		msg("idempotency_key", "b-1"),
		msg("subject", nil),
	}}
	r := mustStatus(t, a.Do(http.MethodPost, "/v1/emails/batch", body), http.StatusMultiStatus)
	data := r["data"].([]any)
	want := []struct{ status, code string }{
		{"queued", ""}, {"failed", "sandbox_recipient_not_allowed"}, {"scheduled", ""}, {"failed", "invalid_request"},
		{"queued", ""}, {"failed", "idempotency_in_flight"}, {"failed", "missing_subject"},
	}
	if len(data) != len(want) {
		t.Fatalf("%d entries", len(data))
	}
	for i, w := range want {
		e := data[i].(map[string]any)
		if e["status"] != w.status {
			t.Fatalf("entry %d: %v, want %v", i, e, w)
		}
		if w.code == "" {
			if id, _ := e["id"].(string); id == "" {
				t.Fatalf("entry %d has no id: %v", i, e)
			}
			continue
		}
		if e["id"] != nil || e["error"].(map[string]any)["code"] != w.code {
			t.Fatalf("entry %d: %v, want %s", i, e, w.code)
		}
	}
	waitStatus(t, a, data[0].(map[string]any)["id"].(string), "delivered", 10*time.Second)

	// A later batch repeating b-1 gets the first id back.
	again := mustStatus(t, a.Do(http.MethodPost, "/v1/emails/batch", map[string]any{"emails": []any{msg("idempotency_key", "b-1")}}), http.StatusMultiStatus)
	if got := again["data"].([]any)[0].(map[string]any)["id"]; got != data[4].(map[string]any)["id"] {
		t.Fatalf("replayed id %v", got)
	}

	many := make([]any, 101)
	for i := range many {
		many[i] = msg()
	}
	for _, tt := range []struct {
		body any
		code string
	}{
		{map[string]any{"emails": []any{}}, "empty_batch"},
		{map[string]any{}, "empty_batch"},
		{map[string]any{"emails": many}, "batch_too_large"},
		{map[string]any{"emails": []any{msg()}, "extra": 1}, "invalid_request"},
		{`1`, "invalid_request"}, // a bare array is Resend's batch (TestResendAliases)
	} {
		r := a.Do(http.MethodPost, "/v1/emails/batch", tt.body)
		if r.Status != http.StatusBadRequest || r.ErrCode() != tt.code {
			t.Fatalf("%d %s, want %s", r.Status, r.Body, tt.code)
		}
	}
}

// TestReads: list newest first with cursor pagination, single read with
// events, 404 across workspaces and across keys for a send-only key.
func TestReads(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, send(t, a, msg("subject", "n"+string(rune('0'+i)), "cc", "delivered+cc@mailroom.test",
			"reply_to", []string{"Help <help@example.com>"}, "tags", map[string]string{"i": string(rune('0' + i))})))
		// Distinct created_at, so the order is by time, not id: the next
		// send is accepted in a later millisecond.
		sent := time.Now().UnixMilli()
		wait.For(t, time.Second, func() bool { return time.Now().UnixMilli() > sent }, "the clock stood still")
	}
	var seen []string
	path := "/v1/emails?limit=2"
	for page := 0; ; page++ {
		r := mustStatus(t, a.Do(http.MethodGet, path, nil), http.StatusOK)
		for _, e := range r["data"].([]any) {
			seen = append(seen, e.(map[string]any)["id"].(string))
		}
		if r["has_more"] != true {
			if r["next_cursor"] != nil {
				t.Fatal("next_cursor without has_more")
			}
			break
		}
		path = "/v1/emails?limit=2&cursor=" + url.QueryEscape(r["next_cursor"].(string))
		if page > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if len(seen) != 5 {
		t.Fatalf("seen %v", seen)
	}
	for i := range seen {
		if seen[i] != ids[len(ids)-1-i] {
			t.Fatalf("order %v, sent %v", seen, ids)
		}
	}
	def := mustStatus(t, a.Do(http.MethodGet, "/v1/emails", nil), http.StatusOK)
	if len(def["data"].([]any)) != 5 || def["has_more"] != false {
		t.Fatalf("%v", def)
	}
	// Every entry of the list carries its timeline, as the single read does.
	for _, e := range def["data"].([]any) {
		evs, _ := e.(map[string]any)["events"].([]any)
		if len(evs) == 0 || evs[0].(map[string]any)["type"] != "email.accepted" {
			t.Fatalf("list entry without its timeline: %v", e)
		}
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x"} {
		if r := a.Do(http.MethodGet, "/v1/emails?"+q, nil); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d", q, r.Status)
		}
	}
	if r := a.Do(http.MethodGet, "/v1/emails?cursor=forged", nil); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("forged cursor: %d", r.Status)
	}

	e := waitStatus(t, a, ids[0], "delivered", 10*time.Second)
	if e["subject"] != "n0" || e["from"] != sandbox || e["to"].([]any)[0] != delivered || e["cc"].([]any)[0] != "delivered+cc@mailroom.test" ||
		e["reply_to"].([]any)[0] != `"Help" <help@example.com>` || e["scheduled_at"] != nil || e["tags"].(map[string]any)["i"] != "0" ||
		e["opens"] != float64(0) || e["clicks"] != float64(0) || e["created_at"] == "" {
		t.Fatalf("%v", e)
	}
	ev := e["events"].([]any)[0].(map[string]any)
	if ev["type"] != "email.accepted" || ev["sequence"] != float64(1) || ev["id"] == "" || ev["at"] == "" {
		t.Fatalf("event %v", ev)
	}

	// Another workspace's id is 404.
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	if r := a.DoKey(otherKey, http.MethodGet, "/v1/emails/"+ids[0], nil); r.Status != http.StatusNotFound || r.ErrCode() != "not_found" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := a.Do(http.MethodGet, "/v1/emails/em_nope", nil); r.Status != http.StatusNotFound {
		t.Fatalf("%d", r.Status)
	}

	// A send-only key reads what it sent and nothing else.
	k := mustStatus(t, a.Do(http.MethodPost, "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}}), http.StatusCreated)
	sendKey := k["key"].(string)
	mine := mustStatus(t, a.DoKey(sendKey, http.MethodPost, "/v1/emails", msg()), http.StatusOK)["id"].(string)
	if r := a.DoKey(sendKey, http.MethodGet, "/v1/emails/"+mine, nil); r.Status != http.StatusOK {
		t.Fatalf("own email: %d", r.Status)
	}
	if r := a.DoKey(sendKey, http.MethodGet, "/v1/emails/"+ids[0], nil); r.Status != http.StatusNotFound {
		t.Fatalf("other key's email: %d", r.Status)
	}
	list := mustStatus(t, a.DoKey(sendKey, http.MethodGet, "/v1/emails", nil), http.StatusOK)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != mine {
		t.Fatalf("send-only list %v", list)
	}
	if full := mustStatus(t, a.Do(http.MethodGet, "/v1/emails", nil), http.StatusOK)["data"].([]any); len(full) != 6 {
		t.Fatalf("workspace key sees %d", len(full))
	}
}
