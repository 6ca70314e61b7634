package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"

	"mailroom/internal/testkit/testapp"
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
