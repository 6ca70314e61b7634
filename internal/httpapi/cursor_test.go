package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/wait"
)

// TestCursorBoundToItsList: a cursor issued by one list route is refused
// with 422 invalid_cursor on every other list route, and still works on its
// own.
func TestCursorBoundToItsList(t *testing.T) {
	a := testapp.Start(t)
	for i := range 2 {
		if r := a.Do("POST", "/v1/suppressions", map[string]any{"email": fmt.Sprintf("c%d@example.com", i), "reason": "unsub"}); r.Status != 201 {
			t.Fatalf("suppress: %d %s", r.Status, r.Body)
		}
		send := map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "Hi", "text": "Hi"}
		if r := a.Do("POST", "/v1/emails", send); r.Status != 200 {
			t.Fatalf("send: %d %s", r.Status, r.Body)
		}
	}
	cursorOf := func(path string) string {
		t.Helper()
		r := a.Do("GET", path+"?limit=1", nil)
		c, ok := r.JSON()["next_cursor"].(string)
		if r.Status != 200 || !ok {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		return url.QueryEscape(c)
	}
	lists := map[string]string{"/v1/emails": cursorOf("/v1/emails"), "/v1/suppressions": cursorOf("/v1/suppressions")}
	for issued, c := range lists {
		if r := a.Do("GET", issued+"?limit=1&cursor="+c, nil); r.Status != 200 {
			t.Fatalf("%s on its own list: %d %s", issued, r.Status, r.Body)
		}
		for _, other := range []string{"/v1/emails", "/v1/suppressions", "/v1/webhooks/deliveries"} {
			if other == issued {
				continue
			}
			if r := a.Do("GET", other+"?cursor="+c, nil); r.Status != 422 || r.ErrCode() != "invalid_cursor" {
				t.Errorf("cursor of %s on %s: %d %s", issued, other, r.Status, r.Body)
			}
		}
	}
}

// TestWholeCollectionLists: the lists that answer their whole collection
// say so (has_more false, next_cursor null) and refuse any cursor with 422
// invalid_cursor, since they issue none: one from another list or a made-up one.
func TestWholeCollectionLists(t *testing.T) {
	a := testapp.Start(t)
	if r := a.Do("POST", "/v1/templates", map[string]any{"name": "Welcome", "text": "Hi", "publish": true}); r.Status != 201 {
		t.Fatalf("template: %d %s", r.Status, r.Body)
	}
	tpl := a.Do("GET", "/v1/templates", nil).JSON()["templates"].([]any)[0].(map[string]any)["id"].(string)
	r := a.Do("POST", "/v1/automations", map[string]any{"yaml": apiFlow})
	if r.Status != 201 {
		t.Fatalf("automation: %d %s", r.Status, r.Body)
	}
	auto := r.JSON()["id"].(string)
	for _, p := range []string{"/v1/audiences", "/v1/topics"} {
		body := map[string]any{"name": "One"}
		if p == "/v1/topics" {
			body["default_opt_in"] = true
		}
		if r := a.Do("POST", p, body); r.Status != 201 {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}
	send := map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "Hi", "text": "Hi"}
	for range 2 {
		if r := a.Do("POST", "/v1/emails", send); r.Status != 200 {
			t.Fatalf("send: %d %s", r.Status, r.Body)
		}
	}
	foreign, _ := a.Do("GET", "/v1/emails?limit=1", nil).JSON()["next_cursor"].(string)
	if foreign == "" {
		t.Fatal("no cursor from /v1/emails")
	}
	for _, p := range []string{"/v1/api-keys", "/v1/domains", "/v1/webhooks", "/v1/audiences", "/v1/segments", "/v1/templates",
		"/v1/templates/" + tpl + "/versions", "/v1/topics", "/v1/automations", "/v1/automations/" + auto + "/versions", "/v1/mailboxes", "/v1/ips"} {
		r := a.Do("GET", p, nil)
		if m := r.JSON(); r.Status != 200 || m["has_more"] != false || m["next_cursor"] != nil || !hasKey(m, "next_cursor") {
			t.Errorf("%s: %d %.300s", p, r.Status, r.Body)
		}
		for _, q := range []string{"cursor=" + url.QueryEscape(foreign), "after=not-a-cursor", "before=x"} {
			if r := a.Do("GET", p+"?"+q, nil); r.Status != 422 || r.ErrCode() != "invalid_cursor" {
				t.Errorf("%s?%.20s: %d %s", p, q, r.Status, r.Body)
			}
		}
	}
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// TestAutomationRunsPaged: GET /v1/automations/{id}/runs pages with limit
// and cursor, newest first, so every run can be read; the last page has
// has_more false and next_cursor null, and a bad cursor answers 422.
func TestAutomationRunsPaged(t *testing.T) {
	a := testapp.Start(t)
	r := a.Do("POST", "/v1/automations", map[string]any{"yaml": apiFlow})
	if r.Status != 201 {
		t.Fatalf("automation: %d %s", r.Status, r.Body)
	}
	auto := r.JSON()["id"].(string)
	var started []string
	for i := range 5 {
		r := a.Do("POST", "/v1/automations/"+auto+"/trigger", map[string]any{"email": fmt.Sprintf("run%d@example.com", i), "idempotency_key": fmt.Sprint("k", i)})
		if r.Status != 202 {
			t.Fatalf("trigger %d: %d %s", i, r.Status, r.Body)
		}
		started = append(started, r.JSON()["run_id"].(string))
	}
	// The runs reach their wait on the queue; the status filter pages too.
	var waiting *testapp.Response
	if !wait.Until(10*time.Second, func() bool {
		waiting = a.Do("GET", "/v1/automations/"+auto+"/runs?status=waiting", nil)
		return len(waiting.JSON()["runs"].([]any)) == 5
	}) {
		t.Fatalf("not 5 runs waiting: %s", waiting.Body)
	}
	for _, status := range []string{"", "&status=waiting"} {
		var seen []string
		path := "/v1/automations/" + auto + "/runs?limit=2" + status
		for page := 0; ; page++ {
			r := a.Do("GET", path, nil)
			var out struct {
				Runs []struct {
					RunID string `json:"run_id"`
				}
				HasMore    bool    `json:"has_more"`
				NextCursor *string `json:"next_cursor"`
			}
			r.Decode(t, &out)
			if r.Status != 200 || page > 3 {
				t.Fatalf("page %d: %d %s", page, r.Status, r.Body)
			}
			for _, run := range out.Runs {
				seen = append(seen, run.RunID)
			}
			if want := page < 2; out.HasMore != want || (out.NextCursor != nil) != want || len(out.Runs) != map[bool]int{true: 2, false: 1}[want] {
				t.Fatalf("page %d%s: %s", page, status, r.Body)
			}
			if !out.HasMore {
				break
			}
			path = "/v1/automations/" + auto + "/runs?limit=2" + status + "&cursor=" + url.QueryEscape(*out.NextCursor)
		}
		for i, id := range seen { // newest first: the reverse of the order they started
			if id != started[len(started)-1-i] {
				t.Errorf("%s: runs read %v, started %v", status, seen, started)
				break
			}
		}
	}
	if r := a.Do("GET", "/v1/automations/"+auto+"/runs?cursor=forged", nil); r.Status != 422 || r.ErrCode() != "invalid_cursor" {
		t.Errorf("forged cursor: %d %s", r.Status, r.Body)
	}
}
