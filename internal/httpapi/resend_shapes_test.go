package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestSDKListShape: every list answer carries object "list" and data[]
// (the rows the spec's own key carries, which stays) for the Resend SDKs.
func TestSDKListShape(t *testing.T) {
	a := testapp.Start(t)
	wantStatus(t, a.Do("POST", "/v1/segments", map[string]any{"name": "S"}), http.StatusCreated)
	wantStatus(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "A"}), http.StatusCreated)
	wantStatus(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "ann@example.com"}), http.StatusCreated)
	wantStatus(t, a.Do("POST", "/v1/suppressions", map[string]any{"email": "sup@example.com"}), http.StatusCreated)
	for path, key := range map[string]string{"/v1/segments": "segments", "/v1/audiences": "audiences", "/v1/contacts": "contacts",
		"/v1/suppressions": "suppressions", "/v1/templates": "templates", "/v1/topics": "topics", "/v1/broadcasts": "broadcasts",
		"/v1/automations": "automations", "/v1/emails": "", "/v1/api-keys": "api_keys", "/v1/domains": "domains", "/v1/webhooks": "webhooks"} {
		body := wantStatus(t, a.Do("GET", path, nil), http.StatusOK)
		data, ok := body["data"].([]any)
		if body["object"] != "list" || !ok {
			t.Errorf("%s: object %v, data %v", path, body["object"], body["data"])
			continue
		}
		if key != "" {
			if own, ok := body[key].([]any); !ok || len(own) != len(data) {
				t.Errorf("%s: the spec's %s %v beside data %v", path, key, body[key], data)
			}
		}
	}
}

// TestBroadcastSDKAdditions: create{send} and scheduled_at phrases as the
// Resend SDKs send them; RFC 3339 still works, and what neither reads keeps
// the spec's 400.
func TestBroadcastSDKAdditions(t *testing.T) {
	a := testapp.Start(t)
	aud := wantStatus(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}), http.StatusCreated)["id"].(string)
	wantStatus(t, a.Do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "m1@example.net"}}), http.StatusCreated)
	draft := map[string]any{"audience_id": aud, "from": sandboxFrom, "subject": "News", "text": "x"}

	b := wantStatus(t, a.Do("POST", "/v1/broadcasts", draft), http.StatusCreated)
	s := wantStatus(t, a.Do("POST", "/v1/broadcasts/"+b["id"].(string)+"/send", map[string]any{"scheduled_at": "in 1 hour", "broadcast_id": b["id"]}), http.StatusOK)
	at, err := time.Parse(time.RFC3339, s["scheduled_at"].(string))
	if s["status"] != "scheduled" || err != nil || time.Until(at) < 50*time.Minute || time.Until(at) > 70*time.Minute {
		t.Fatalf("send in 1 hour: %v", s)
	}

	b2 := wantStatus(t, a.Do("POST", "/v1/broadcasts", draft), http.StatusCreated)
	r := a.Do("POST", "/v1/broadcasts/"+b2["id"].(string)+"/send", map[string]any{"scheduled_at": "someday"})
	if body := wantStatus(t, r, http.StatusBadRequest); r.ErrCode() != "invalid_request" || body["message"] == "" {
		t.Fatalf("unreadable scheduled_at: %s", r.Body)
	}
	if r := a.Do("POST", "/v1/broadcasts/"+b2["id"].(string)+"/send", map[string]any{"broadcast_id": "bc_other"}); r.Status != http.StatusBadRequest {
		t.Fatalf("another broadcast_id: %d %s", r.Status, r.Body)
	}

	sched := map[string]any{"send": true, "scheduled_at": time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)}
	for k, v := range draft {
		sched[k] = v
	}
	if c := wantStatus(t, a.Do("POST", "/v1/broadcasts", sched), http.StatusCreated); c["status"] != "scheduled" {
		t.Fatalf("create{send, scheduled_at}: %v", c)
	}
	now := map[string]any{"send": true}
	for k, v := range draft {
		now[k] = v
	}
	c := wantStatus(t, a.Do("POST", "/v1/broadcasts", now), http.StatusCreated)
	if c["status"] == "draft" {
		t.Fatalf("create{send} left a draft: %v", c)
	}
	delete(sched, "send")
	if r := a.Do("POST", "/v1/broadcasts", sched); r.Status != http.StatusBadRequest {
		t.Fatalf("scheduled_at without send: %d %s", r.Status, r.Body)
	}
}
