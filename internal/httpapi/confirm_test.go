package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestDoubleOptIn: a pending member gets its confirmation only from the
// confirm route (at most three), through the normal sending path; the link
// shows a form on GET and subscribes only on POST; a tampered or expired
// link answers 400 on a page.
func TestDoubleOptIn(t *testing.T) {
	fake := clock.NewFake(time.Now())
	a := testapp.Start(t, testapp.WithClock(fake))
	s := scenario.New(a).WithOther()
	addr := "delivered+doi@" + a.Config.ServiceDomain
	s.Run(t,
		sc{Name: "audience", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "Weekly"}, Status: 201, Save: map[string]string{"aud": "id"}},
		sc{Name: "require confirmation", Method: "PATCH", Path: "/v1/audiences/{aud}", Body: map[string]any{"require_double_opt_in": true,
			"confirmation_subject": "{{audience_name}} for {{ email }} ({{ ttl_days }} days, {{ unknown }})"}, Status: 200},
		sc{Name: "import", Method: "POST", Path: "/v1/audiences/{aud}/contacts",
			Body:   []any{map[string]any{"email": addr}, map[string]any{"email": "delivered+two@" + a.Config.ServiceDomain}, map[string]any{"email": "sub@example.com", "status": "subscribed"}},
			Status: 201, Shape: shape{"created": 3}},
		sc{Name: "creating pending members sent nothing", Method: "GET", Path: "/v1/emails", Status: 200, Shape: shape{"data": scenario.Len(0)}},
		sc{Name: "pending members", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=pending", Status: 200,
			Shape: shape{"contacts": scenario.Len(2)}},
		sc{Name: "find the member", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=pending", Status: 200,
			Save: map[string]string{"m0": "contacts.0.id", "m0email": "contacts.0.email", "m1": "contacts.1.id"}},
		sc{Name: "find the subscribed one", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=subscribed", Status: 200,
			Save: map[string]string{"sub": "contacts.0.id"}},
		sc{Name: "not pending", Method: "POST", Path: "/v1/audiences/{aud}/contacts/{sub}/confirm", Status: 422, Code: "not_pending"},
		sc{Name: "from another workspace", Method: "POST", Path: "/v1/audiences/{aud}/contacts/{m0}/confirm", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "send", Method: "POST", Path: "/v1/audiences/{aud}/contacts/{m0}/confirm", Status: 202,
			Shape: shape{"membership_id": scenario.Var("m0"), "email": scenario.Var("m0email"), "sent": true, "status": "pending", "sends": 1,
				"confirm_url": scenario.Prefix(a.Config.PublicURL + "/confirm/")},
			Save: map[string]string{"url": "confirm_url", "email": "email_id"}},
		sc{Name: "the email went the normal way", Method: "GET", Path: "/v1/emails/{email}", Status: 200,
			Check: func(t testing.TB, r *testapp.Response) {
				want := "Weekly for " + s.Get("m0email") + " (30 days, {{ unknown }})"
				if got := r.JSON()["subject"]; got != want {
					t.Errorf("subject %q, want %q", got, want)
				}
			}},
		sc{Name: "second", Method: "POST", Path: "/v1/audiences/{aud}/contacts/{m0}/confirm", Status: 202, Shape: shape{"sends": 2}},
		sc{Name: "third", Method: "POST", Path: "/v1/audiences/{aud}/contacts/{m0}/confirm", Status: 202, Shape: shape{"sends": 3}},
		sc{Name: "fourth", Method: "POST", Path: "/v1/audiences/{aud}/contacts/{m0}/confirm", Status: 422, Code: "confirmation_limit"},
	)
	link := a.URL + strings.TrimPrefix(s.Get("url"), a.Config.PublicURL)
	page := func(method, u string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(url.Values{}.Encode())
		}
		req, _ := http.NewRequest(method, u, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status := func() string {
		r := a.Do("GET", "/v1/audiences/"+s.Get("aud")+"/contacts/"+s.Get("m0"), nil)
		return r.JSON()["status"].(string)
	}

	// A scanner's GET shows the form and changes nothing.
	if code, body := page("GET", link); code != 200 || !strings.Contains(body, `<form method="post">`) || status() != "pending" {
		t.Fatalf("GET: %d %s, member %s", code, body, status())
	}
	tampered := link[:len(link)-2] + "xx"
	if code, body := page("POST", tampered); code != 400 || !strings.Contains(body, "not valid") || status() != "pending" {
		t.Fatalf("tampered: %d %s, member %s", code, body, status())
	}
	if code, _ := page("POST", link); code != 200 || status() != "subscribed" {
		t.Fatalf("POST: %d, member %s", code, status())
	}
	if code, _ := page("POST", link); code != 200 || status() != "subscribed" {
		t.Fatalf("POST again: %d, member %s", code, status())
	}

	// A link is valid 30 days.
	r := a.Do("POST", "/v1/audiences/"+s.Get("aud")+"/contacts/"+s.Get("m1")+"/confirm", nil)
	if r.Status != 202 {
		t.Fatalf("send m1: %d %s", r.Status, r.Body)
	}
	link1 := a.URL + strings.TrimPrefix(r.JSON()["confirm_url"].(string), a.Config.PublicURL)
	fake.Advance(30*24*time.Hour + time.Second)
	if code, _ := page("POST", link1); code != 400 {
		t.Fatalf("expired link: %d", code)
	}
	r = a.Do("GET", "/v1/audiences/"+s.Get("aud")+"/contacts/"+s.Get("m1"), nil)
	if r.JSON()["status"] != "pending" {
		t.Fatalf("expired link changed the member: %s", r.Body)
	}
}

// TestConfirmPageRateLimited: the hosted confirmation page, GET and POST
// alike, answers at most MAILROOM_RATE_LIMIT_ANONYMOUS requests a minute
// per client IP, then 429 on a page with Retry-After, before any link is
// checked; its bucket is its own, so the anonymous /v1 budget is untouched.
func TestConfirmPageRateLimited(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_RATE_LIMIT_ANONYMOUS", "3"))
	hit := func(method string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, a.URL+"/confirm/not-a-link", nil)
		resp, err := a.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i, m := range []string{"GET", "POST", "GET"} {
		if r := hit(m); r.StatusCode != 400 {
			t.Fatalf("request %d (%s): %d, want 400 (a bad link, within the budget)", i+1, m, r.StatusCode)
		}
	}
	for _, m := range []string{"POST", "GET"} {
		r := hit(m)
		if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s over the budget: %d, Retry-After %q, %s", m, r.StatusCode, r.Header.Get("Retry-After"), r.Header.Get("Content-Type"))
		}
	}
	resp, err := a.Client.Get(a.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("anonymous /v1 call after the page's budget ran out: %d", resp.StatusCode)
	}
}
