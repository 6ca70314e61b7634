package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestBoundKeySessionStaysInItsMailbox: signed in with a key bound to a
// mailbox, the dashboard shows and touches only that mailbox's webhooks,
// keys and emails, refuses workspace-wide pages, and makes no key with
// more than the session's key holds (issue #38, findings 1 and 2).
func TestBoundKeySessionStaysInItsMailbox(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	owner := a.Do("GET", "/v1/api-keys", nil).JSON()["api_keys"].([]any)[0].(map[string]any)["id"].(string)
	mbx := a.Do("POST", "/v1/mailboxes", map[string]any{"local_part": "support"}).JSON()["id"].(string)
	bound := a.Do("POST", "/v1/api-keys", map[string]any{"name": "support desk", "mailbox_id": mbx}).JSON()
	hook := a.Do("POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/all"}).JSON()["id"].(string)
	theirs := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "theirs", "text": "x"}).JSON()["id"].(string)

	v := newVisitor(t, a)
	want(t, v.get("/sign-in"), http.StatusOK)
	if p := v.post("/sign-in", url.Values{"key": {bound["key"].(string)}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in %d", p.status)
	}
	home := v.get("/")
	want(t, home, http.StatusOK, "Overview")
	if strings.Contains(home.body, `href="/domains"`) {
		t.Error("a bound session's navigation offers the workspace-wide Domains page")
	}
	want(t, v.get("/domains"), http.StatusForbidden, "bound to mailbox")
	want(t, v.get("/audiences"), http.StatusForbidden, "bound to mailbox")

	p := v.get("/webhooks")
	want(t, p, http.StatusOK)
	if strings.Contains(p.body, hook) {
		t.Fatal("a bound session lists another mailbox's endpoint")
	}
	want(t, v.get("/webhooks/"+hook), http.StatusNotFound)
	want(t, v.post("/webhooks/"+hook+"/test", nil), http.StatusNotFound)
	p = v.post("/webhooks", url.Values{"url": {"http://127.0.0.1:9/mine"}, "event": {"email.received"}})
	if p.status != http.StatusCreated || !strings.Contains(p.body, "whsec_") {
		t.Fatalf("adding an endpoint answered %d:\n%s", p.status, p.body)
	}
	hooks := a.Do("GET", "/v1/webhooks", nil).JSON()["webhooks"].([]any)
	if len(hooks) != 2 || hooks[1].(map[string]any)["mailbox_id"] != mbx {
		t.Fatalf("the session's endpoint is not scoped to its mailbox: %v", hooks)
	}

	p = v.get("/api-keys")
	want(t, p, http.StatusOK, bound["id"].(string))
	if strings.Contains(p.body, owner) {
		t.Fatal("a bound session lists the owner's key")
	}
	want(t, v.post("/api-keys/"+owner+"/revoke", nil), http.StatusNotFound)
	want(t, v.post("/api-keys", url.Values{"name": {"same"}, "scope": {"mail:read"}}), http.StatusCreated)
	keys := a.Do("GET", "/v1/api-keys", nil).JSON()["api_keys"].([]any)
	if len(keys) != 3 || keys[2].(map[string]any)["mailbox_id"] != mbx {
		t.Fatalf("want the owner's key, the bound one and a key bound like it: %v", keys)
	}

	p = v.get("/emails")
	want(t, p, http.StatusOK)
	if strings.Contains(p.body, theirs) {
		t.Fatal("a bound session lists an email sent from another address")
	}
	want(t, v.get("/emails/"+theirs), http.StatusNotFound)

	// A workspace-only key's session offers and makes only workspace keys.
	admin := a.Do("POST", "/v1/api-keys", map[string]any{"name": "admin", "scopes": []string{"workspace"}}).JSON()["key"].(string)
	w := newVisitor(t, a)
	want(t, w.get("/sign-in"), http.StatusOK)
	if p := w.post("/sign-in", url.Values{"key": {admin}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in %d", p.status)
	}
	p = w.get("/api-keys")
	want(t, p, http.StatusOK)
	if strings.Contains(p.body, `value="mail:read"`) {
		t.Error("the key form offers a scope the session's key lacks")
	}
	want(t, w.post("/api-keys", url.Values{"name": {"more"}, "scope": {"mail:read"}}), http.StatusForbidden, "mail:read")
}
