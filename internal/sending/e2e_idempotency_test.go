package sending_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"mailroom/internal/testkit/testapp"
)

func countEmails(t *testing.T, a *testapp.App) int {
	t.Helper()
	var n int
	if err := a.DB.QueryRow(context.Background(), `SELECT count(*) FROM emails WHERE workspace_id = ?`, a.WorkspaceID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIdempotency: the same key and body answer the first result and send
// nothing more; another body answers idempotency_key_reused; keys are per
// workspace; scheduled sends replay their 202.
func TestIdempotency(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	first := mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg("idempotency_key", "order-1")), http.StatusOK)
	again := mustStatus(t, a.Do(http.MethodPost, "/v1/emails", `{"text":"Hi there","subject":"Hello","to":["delivered@MAILROOM.test"],"idempotency_key":"order-1","from":"onboarding@mailroom.test"}`), http.StatusOK)
	if again["id"] != first["id"] || again["status"] != "queued" {
		t.Fatalf("replay %v, first %v", again, first)
	}
	r := a.Do(http.MethodPost, "/v1/emails", msg("idempotency_key", "order-1", "subject", "Other"))
	if r.Status != http.StatusConflict || r.ErrCode() != "idempotency_key_reused" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if n := countEmails(t, a); n != 1 {
		t.Fatalf("%d emails", n)
	}

	// Another workspace may use the same key for its own email.
	_, key := a.NewWorkspace("Other", "other@example.com")
	other := mustStatus(t, a.DoKey(key, http.MethodPost, "/v1/emails", msg("to", "other@example.com", "idempotency_key", "order-1")), http.StatusOK)
	if other["id"] == first["id"] {
		t.Fatal("keys leaked across workspaces")
	}

	s1 := mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg("idempotency_key", "later", "send_at", "in 2 hours")), http.StatusAccepted)
	s2 := mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg("idempotency_key", "later", "send_at", "in 2 hours")), http.StatusAccepted)
	if s1["id"] != s2["id"] || s2["status"] != "scheduled" {
		t.Fatalf("%v %v", s1, s2)
	}

	// A refused send stores nothing under its key: fixing it and retrying works.
	r = a.Do(http.MethodPost, "/v1/emails", msg("idempotency_key", "fixme", "to", "stranger@else.example"))
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	send(t, a, msg("idempotency_key", "fixme"))
}

// TestIdempotencyRace fires 20 identical requests at once: exactly one email
// exists afterwards; every answer is 200 with its id or 409 in flight.
func TestIdempotencyRace(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	body := msg("idempotency_key", "race-1")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[any]int{}
	inFlight := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.Do(http.MethodPost, "/v1/emails", body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == http.StatusOK:
				ids[r.JSON()["id"]]++
			case r.Status == http.StatusConflict && r.ErrCode() == "idempotency_in_flight":
				inFlight++
			default:
				t.Errorf("%d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("ids %v", ids)
	}
	if n := countEmails(t, a); n != 1 {
		t.Fatalf("%d emails", n)
	}
	t.Logf("200: %v, in flight: %d", ids, inFlight)
}
