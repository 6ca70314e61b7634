package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

const (
	sandboxFrom = "onboarding@mailroom.test"
	deliveredTo = "delivered@mailroom.test"
)

// doHeader is a call with extra request headers.
func doHeader(a *testapp.App, method, path, body string, h map[string]string) *testapp.Response {
	req, err := http.NewRequest(method, a.URL+path, strings.NewReader(body))
	if err != nil {
		a.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	return a.Send(req)
}

func wantStatus(t *testing.T, r *testapp.Response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	return r.JSON()
}

// TestResendAliases: Resend's spellings are accepted beside the spec's,
// never override them, and unknown fields are still refused.
func TestResendAliases(t *testing.T) {
	a := testapp.Start(t)
	send := `{"from":"` + sandboxFrom + `","to":"` + deliveredTo + `","subject":"Hi","text":"Hello",
		"tags":[{"name":"campaign","value":"welcome"}],
		"attachments":[{"filename":"a.txt","content":"aGVsbG8=","content_type":"text/plain"},
		               {"filename":"b.bin","content":[104,105],"contentType":"application/octet-stream"}]}`

	t.Run("Idempotency-Key header", func(t *testing.T) {
		h := map[string]string{"Idempotency-Key": "resend-1"}
		first := wantStatus(t, doHeader(a, "POST", "/v1/emails", send, h), http.StatusOK)
		again := wantStatus(t, doHeader(a, "POST", "/v1/emails", send, h), http.StatusOK)
		if first["id"] != again["id"] {
			t.Fatalf("header key did not replay: %v then %v", first["id"], again["id"])
		}
		// The same key in the body and the header: one request.
		same := strings.Replace(send, `"subject"`, `"idempotency_key":"resend-1","subject"`, 1)
		if r := wantStatus(t, doHeader(a, "POST", "/v1/emails", same, h), http.StatusOK); r["id"] != first["id"] {
			t.Fatalf("same key in both: %v", r["id"])
		}
		differ := strings.Replace(send, `"subject"`, `"idempotency_key":"other","subject"`, 1)
		r := doHeader(a, "POST", "/v1/emails", differ, h)
		if wantStatus(t, r, http.StatusBadRequest); r.ErrCode() != "invalid_request" {
			t.Fatalf("differing keys: %s", r.Body)
		}
		e := wantStatus(t, a.Do("GET", "/v1/emails/"+first["id"].(string), nil), http.StatusOK)
		if e["tags"].(map[string]any)["campaign"] != "welcome" {
			t.Fatalf("tags %v", e["tags"])
		}
	})
	t.Run("scheduled_at on send and on PATCH", func(t *testing.T) {
		body := strings.Replace(send, `"subject"`, `"scheduled_at":"in 1 hour","subject"`, 1)
		r := wantStatus(t, doHeader(a, "POST", "/v1/emails", body, nil), http.StatusAccepted)
		id := r["id"].(string)
		p := wantStatus(t, doHeader(a, "PATCH", "/v1/emails/"+id, `{"scheduled_at":"in 2 hours"}`, nil), http.StatusOK)
		// send_at wins over scheduled_at.
		both := wantStatus(t, doHeader(a, "PATCH", "/v1/emails/"+id, `{"send_at":"in 3 hours","scheduled_at":"in 2 hours"}`, nil), http.StatusOK)
		if p["scheduled_at"] == both["scheduled_at"] {
			t.Fatalf("send_at did not win: %v %v", p, both)
		}
		wantStatus(t, doHeader(a, "POST", "/v1/emails/"+id+"/cancel", ``, nil), http.StatusOK)
	})
	t.Run("bad alias shapes and unknown fields", func(t *testing.T) {
		for _, body := range []string{
			strings.Replace(send, `"tags":[{"name":"campaign","value":"welcome"}]`, `"tags":[{"value":"x"}]`, 1),
			strings.Replace(send, `"tags":[{"name":"campaign","value":"welcome"}]`, `"tags":[{"name":"a","colour":"x"}]`, 1),
			strings.Replace(send, `[104,105]`, `[104,300]`, 1),
			strings.Replace(send, `"subject"`, `"scheduledAt":"in 1 hour","subject"`, 1),
		} {
			r := doHeader(a, "POST", "/v1/emails", body, nil)
			if r.Status != http.StatusBadRequest || r.ErrCode() != "invalid_request" {
				t.Fatalf("%s: %d %s", body, r.Status, r.Body)
			}
		}
	})
	t.Run("batch as a bare array, with a batch key", func(t *testing.T) {
		batch := `[` + send + `,` + send + `]`
		h := map[string]string{"Idempotency-Key": "batch-1"}
		first := wantStatus(t, doHeader(a, "POST", "/v1/emails/batch", batch, h), http.StatusMultiStatus)
		again := wantStatus(t, doHeader(a, "POST", "/v1/emails/batch", batch, h), http.StatusMultiStatus)
		d1, d2 := first["data"].([]any), again["data"].([]any)
		if len(d1) != 2 || d1[0].(map[string]any)["id"] == d1[1].(map[string]any)["id"] ||
			d1[0].(map[string]any)["id"] != d2[0].(map[string]any)["id"] || d1[1].(map[string]any)["id"] != d2[1].(map[string]any)["id"] {
			t.Fatalf("batch replay: %v then %v", d1, d2)
		}
	})
	t.Run("domains {name}, webhooks {endpoint}, api-keys {permission}", func(t *testing.T) {
		d := wantStatus(t, doHeader(a, "POST", "/v1/domains", `{"name":"resend-alias.example"}`, nil), http.StatusCreated)
		if d["domain"] != "resend-alias.example" {
			t.Fatalf("domain %v", d)
		}
		both := wantStatus(t, doHeader(a, "POST", "/v1/domains", `{"domain":"spec-wins.example","name":"alias-loses.example"}`, nil), http.StatusCreated)
		if both["domain"] != "spec-wins.example" {
			t.Fatalf("domain %v", both)
		}
		w := wantStatus(t, doHeader(a, "POST", "/v1/webhooks", `{"endpoint":"http://127.0.0.1:9/hook","events":["email.delivered"]}`, nil), http.StatusCreated)
		if w["url"] != "http://127.0.0.1:9/hook" {
			t.Fatalf("webhook %v", w)
		}
		k := wantStatus(t, doHeader(a, "POST", "/v1/api-keys", `{"name":"sdk","permission":"sending_access"}`, nil), http.StatusCreated)
		if k["token"] != k["key"] || k["token"] == nil || len(k["scopes"].([]any)) != 1 || k["scopes"].([]any)[0] != "mail:send" {
			t.Fatalf("key %v", k)
		}
		full := wantStatus(t, doHeader(a, "POST", "/v1/api-keys", `{"name":"sdk2","permission":"full_access"}`, nil), http.StatusCreated)
		if len(full["scopes"].([]any)) != 3 {
			t.Fatalf("full_access scopes %v", full["scopes"])
		}
		spec := wantStatus(t, doHeader(a, "POST", "/v1/api-keys", `{"name":"sdk3","permission":"full_access","scopes":["mail:read"]}`, nil), http.StatusCreated)
		if len(spec["scopes"].([]any)) != 1 {
			t.Fatalf("scopes did not win: %v", spec["scopes"])
		}
		for _, body := range []string{`{"name":"x","permission":"admin"}`, `{"name":"x","perms":"full_access"}`} {
			if r := doHeader(a, "POST", "/v1/api-keys", body, nil); r.Status != http.StatusBadRequest {
				t.Fatalf("%s: %d %s", body, r.Status, r.Body)
			}
		}
		if r := doHeader(a, "POST", "/v1/api-keys", `{"name":"x","permission":"sending_access","domain_id":"dom_nope"}`, nil); r.Status != http.StatusNotFound {
			t.Fatalf("unknown domain_id: %d %s", r.Status, r.Body)
		}
	})
	t.Run("sending_access with domain_id sends from that domain only", func(t *testing.T) {
		list := wantStatus(t, a.Do("GET", "/v1/domains", nil), http.StatusOK)
		own := list["domains"].([]any)[0].(map[string]any) // the workspace's verified domain
		if own["verification_status"] != "verified" {
			t.Fatalf("first domain %v", own)
		}
		body := `{"name":"restricted","permission":"sending_access","domain_id":"` + own["id"].(string) + `"}`
		if r := doHeader(a, "POST", "/v1/api-keys", strings.Replace(body, "sending_access", "full_access", 1), nil); r.Status != http.StatusBadRequest {
			t.Fatalf("full_access with a domain: %d %s", r.Status, r.Body)
		}
		k := wantStatus(t, doHeader(a, "POST", "/v1/api-keys", body, nil), http.StatusCreated)
		if k["domain_id"] != own["id"] {
			t.Fatalf("key %v", k)
		}
		restricted := a.For(t)
		restricted.Key = k["key"].(string)
		fromOwn := `{"from":"hello@` + own["domain"].(string) + `","to":"` + deliveredTo + `","subject":"Hi","text":"x"}`
		wantStatus(t, doHeader(restricted, "POST", "/v1/emails", fromOwn, nil), http.StatusOK)
		other := doHeader(restricted, "POST", "/v1/emails", `{"from":"`+sandboxFrom+`","to":"`+deliveredTo+`","subject":"Hi","text":"x"}`, nil)
		if other.Status != http.StatusForbidden || other.ErrCode() != "insufficient_scope" {
			t.Fatalf("another domain: %d %s", other.Status, other.Body)
		}
	})
}

// TestResponsesAnSDKReads: every error carries message, name and
// statusCode at the top, in both of the spec's shapes; the lists carry
// data beside their own key.
func TestResponsesAnSDKReads(t *testing.T) {
	a := testapp.Start(t)
	nested := doHeader(a, "POST", "/v1/emails", `{"to":"`+deliveredTo+`"}`, nil)
	m := wantStatus(t, nested, http.StatusBadRequest)
	if m["name"] != "missing_from" || m["statusCode"] != float64(400) || m["message"] == "" || nested.ErrCode() != "missing_from" {
		t.Fatalf("nested error %s", nested.Body)
	}
	unauth := a.DoKey("mr_wrong", "GET", "/v1/domains", nil)
	if m := unauth.JSON(); m["statusCode"] != float64(401) || m["name"] != unauth.ErrCode() || m["message"] == nil {
		t.Fatalf("401 %s", unauth.Body)
	}
	notFound := a.Do("GET", "/v1/emails/em_nope", nil)
	if m := notFound.JSON(); m["statusCode"] != float64(404) || m["name"] != "not_found" {
		t.Fatalf("404 %s", notFound.Body)
	}
	for _, tc := range []struct{ path, key string }{{"/v1/api-keys", "api_keys"}, {"/v1/domains", "domains"}, {"/v1/webhooks", "webhooks"}} {
		m := wantStatus(t, a.Do("GET", tc.path, nil), http.StatusOK)
		spec, _ := m[tc.key].([]any)
		data, _ := m["data"].([]any)
		if spec == nil || data == nil || len(spec) != len(data) {
			t.Fatalf("%s: %v", tc.path, m)
		}
	}
}
