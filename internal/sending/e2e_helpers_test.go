package sending_test

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

const (
	sandbox   = "onboarding@mailroom.test"
	delivered = "delivered@mailroom.test"
	owner     = "owner@example.com" // testapp's workspace owner
)

// domainsTable stands in for the domains area until it is wired: a fixed
// map of workspace/domain to status.
type domainsTable map[string]string

func (d domainsTable) SendingStatus(_ context.Context, ws, domain string) (string, error) {
	return d[ws+"/"+domain], nil
}

// msg is a valid send request to delivered@ that a test adjusts.
func msg(kv ...any) map[string]any {
	m := map[string]any{"from": sandbox, "to": delivered, "subject": "Hello", "text": "Hi there"}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(m, k)
			continue
		}
		m[k] = kv[i+1]
	}
	return maps.Clone(m)
}

func mustStatus(t *testing.T, r *testapp.Response, want int) map[string]any {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r.JSON()
}

func send(t *testing.T, a *testapp.App, body any) string {
	t.Helper()
	r := a.Do(http.MethodPost, "/v1/emails", body)
	m := mustStatus(t, r, http.StatusOK)
	if m["status"] != "queued" {
		t.Fatalf("status %v", m["status"])
	}
	return m["id"].(string)
}

func getEmail(t *testing.T, a *testapp.App, id string) map[string]any {
	t.Helper()
	return mustStatus(t, a.Do(http.MethodGet, "/v1/emails/"+id, nil), http.StatusOK)
}

func waitStatus(t *testing.T, a *testapp.App, id, status string, timeout time.Duration) map[string]any {
	t.Helper()
	var last map[string]any
	testapp.Eventually(t, timeout, func() bool {
		last = getEmail(t, a, id)
		return last["status"] == status
	}, "email %s never reached %s", id, status)
	return last
}

func eventTypes(e map[string]any) []string {
	var out []string
	for _, ev := range e["events"].([]any) {
		out = append(out, ev.(map[string]any)["type"].(string))
	}
	return out
}
