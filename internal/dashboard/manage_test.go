package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestManageWebhooksAndDomains (#43 item 2): an endpoint is disabled,
// enabled and deleted from its page, and a domain removed from its own,
// each through the API's service call; deleting asks first on a page that
// changes nothing, and another workspace's id is not found.
func TestManageWebhooksAndDomains(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	hook := a.Do("POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook"}).JSON()["id"].(string)
	dom := a.Do("POST", "/v1/domains", map[string]any{"domain": "gone.example"}).JSON()["id"].(string)
	v := newVisitor(t, a)
	v.signIn(a.Key)

	want(t, v.get("/webhooks/"+hook), http.StatusOK, "Disable", "Delete…")
	want(t, v.post("/webhooks/"+hook+"/active", url.Values{"active": {"false"}}), http.StatusOK, "disabled", "Enable")
	if a.Do("GET", "/v1/webhooks/"+hook, nil).JSON()["active"] != false {
		t.Fatal("the endpoint is still active")
	}
	want(t, v.post("/webhooks/"+hook+"/active", url.Values{"active": {"true"}}), http.StatusOK, "Disable")
	want(t, v.get("/webhooks/"+hook+"/delete"), http.StatusOK, "cannot be undone", "Delete endpoint")
	if r := a.Do("GET", "/v1/webhooks/"+hook, nil); r.Status != 200 {
		t.Fatal("the confirmation page deleted the endpoint")
	}
	if p := v.post("/webhooks/"+hook+"/delete", nil); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.status, p.body)
	}
	if r := a.Do("GET", "/v1/webhooks/"+hook, nil); r.Status != 404 {
		t.Fatalf("the endpoint outlived its deletion: %d", r.Status)
	}

	want(t, v.get("/domains/"+dom), http.StatusOK, "Remove…")
	want(t, v.get("/domains/"+dom+"/delete"), http.StatusOK, "Remove gone.example?")
	if p := v.post("/domains/"+dom+"/delete", nil); p.status != http.StatusSeeOther {
		t.Fatalf("remove domain: %d %s", p.status, p.body)
	}
	if r := a.Do("GET", "/v1/domains/"+dom, nil); r.Status != 404 {
		t.Fatalf("the domain outlived its removal: %d", r.Status)
	}

	// Another workspace's ids are not found.
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	theirs := a.DoKey(otherKey, "POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/theirs"}).JSON()["id"].(string)
	want(t, v.get("/webhooks/"+theirs+"/delete"), http.StatusNotFound)
	want(t, v.post("/webhooks/"+theirs+"/delete", nil), http.StatusNotFound)
	if r := a.DoKey(otherKey, "GET", "/v1/webhooks/"+theirs, nil); r.Status != 200 || strings.Contains(string(r.Body), "deleted") {
		t.Fatalf("another workspace's endpoint was touched: %d", r.Status)
	}
}

// TestManageTemplatesAudiencesAutomations (#43 item 2): a template and an
// audience are deleted, and an automation disabled, enabled and deleted,
// from their pages, each asking first and making the API's call.
func TestManageTemplatesAudiencesAutomations(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	tpl := a.Do("POST", "/v1/templates", map[string]any{"name": "Old news", "subject": "S", "html": "<p>x</p>"}).JSON()["id"].(string)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "Old list"}).JSON()["id"].(string)
	auto := a.Do("POST", "/v1/automations", map[string]any{"yaml": "name: Drip\ntrigger: { event: api.call }\nsteps:\n  - wait: 2h\n"}).JSON()["id"].(string)
	v := newVisitor(t, a)
	v.signIn(a.Key)
	for _, c := range []struct{ page, confirm, api string }{
		{"/templates/" + tpl, "Delete template", "/v1/templates/" + tpl},
		{"/audiences/" + aud, "Delete audience", "/v1/audiences/" + aud},
		{"/automations/" + auto, "Delete automation", "/v1/automations/" + auto},
	} {
		want(t, v.get(c.page), http.StatusOK, "Delete")
		if c.page == "/automations/"+auto {
			want(t, v.post(c.page+"/enabled", url.Values{"enabled": {"false"}}), http.StatusSeeOther)
			if a.Do("GET", c.api, nil).JSON()["enabled"] != false {
				t.Fatal("the automation is still enabled")
			}
			want(t, v.post(c.page+"/enabled", url.Values{"enabled": {"true"}}), http.StatusSeeOther)
			if a.Do("GET", c.api, nil).JSON()["enabled"] != true {
				t.Fatal("the automation was not enabled again")
			}
		}
		want(t, v.get(c.page+"/delete"), http.StatusOK, c.confirm)
		if r := a.Do("GET", c.api, nil); r.Status != 200 {
			t.Fatalf("%s: the confirmation page deleted it", c.page)
		}
		if p := v.post(c.page+"/delete", nil); p.status != http.StatusSeeOther {
			t.Fatalf("%s: delete %d %s", c.page, p.status, p.body)
		}
		if r := a.Do("GET", c.api, nil); r.Status != 404 {
			t.Fatalf("%s outlived its deletion: %d", c.api, r.Status)
		}
	}
}
