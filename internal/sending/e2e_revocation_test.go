package sending_test

import (
	"net/http"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// A key revoked on one node sends nothing on another, whatever that node
// remembers of it: a send that would succeed, one that would be refused for
// its body, a replay of an idempotent send and a batch all answer 401, and
// no email is booked. On PostgreSQL the sending node trusts its memory of
// the key only until the send's commit, which reads the key again with the
// suppression list; this test is what holds that path to account.
func TestRevokedKeyCannotSendOnAnotherNode(t *testing.T) {
	a := testapp.Start(t)
	b := testapp.Start(t, testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]))
	// c's rate limit runs out: its 429 must not tell a revoked key apart.
	c := testapp.Start(t, testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]), testapp.WithEnv("MAILROOM_RATE_LIMIT", "1"))

	r := a.Do(http.MethodPost, "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	created := mustStatus(t, r, http.StatusCreated)
	key, id := created["key"].(string), created["id"].(string)

	// Node b learns the key by using it.
	replayed := msg("idempotency_key", "order-1")
	for _, body := range []any{msg(), replayed} {
		mustStatus(t, b.DoKey(key, http.MethodPost, "/v1/emails", body), http.StatusOK)
	}
	mustStatus(t, c.DoKey(key, http.MethodPost, "/v1/emails", msg()), http.StatusOK)
	// Until c refuses (a minute's window may turn between two requests).
	limited := false
	for range 3 {
		if limited = c.DoKey(key, http.MethodPost, "/v1/emails", msg()).Status == http.StatusTooManyRequests; limited {
			break
		}
	}
	if !limited {
		t.Fatal("node c never answered 429 at a limit of 1 per minute")
	}
	before := countEmails(t, a)

	mustStatus(t, a.Do(http.MethodDelete, "/v1/api-keys/"+id, nil), http.StatusOK)

	for name, req := range map[string]struct {
		path string
		body any
	}{
		"send":       {"/v1/emails", msg()},
		"scheduled":  {"/v1/emails", msg("send_at", "in 1 hour")},
		"bad body":   {"/v1/emails", msg("from", "not an address")},
		"suppressed": {"/v1/emails", msg("to", "suppressed@mailroom.test")},
		"replay":     {"/v1/emails", replayed},
		"batch":      {"/v1/emails/batch", []any{msg(), msg("from", "not an address")}},
	} {
		r := b.DoKey(key, http.MethodPost, req.path, req.body)
		if r.Status != http.StatusUnauthorized || r.ErrCode() != "unauthorized" {
			t.Errorf("%s with a revoked key: %d %s", name, r.Status, r.Body)
		}
	}
	if r := c.DoKey(key, http.MethodPost, "/v1/emails", msg()); r.Status != http.StatusUnauthorized {
		t.Errorf("rate-limited send with a revoked key: %d %s", r.Status, r.Body)
	}
	if n := countEmails(t, a); n != before {
		t.Errorf("%d emails booked with a revoked key", n-before)
	}
}
