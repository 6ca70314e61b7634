package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/testapp"
)

// TestHostedPagesInBrowser drives the hosted pages in a real headless
// Chromium with a phone-sized window, as a person would: the preference
// page (switch topics, save, then unsubscribe from all), the one-click
// unsubscribe page's "only this topic" button, a tampered link, and the double opt-in page.
// The API then shows what the pages did. One browser serves every step
// (starting one is the slow part).
func TestHostedPagesInBrowser(t *testing.T) {
	b := browser.Start(t)
	a := testapp.Start(t)
	local := func(link string) string { return a.URL + strings.TrimPrefix(link, a.Config.PublicURL) }
	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := a.Do(method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r.JSON()
	}
	subscribed := func(email string) map[string]bool {
		t.Helper()
		out := map[string]bool{}
		for _, p := range must("GET", "/v1/topics/preferences?email="+email, nil, 200)["preferences"].([]any) {
			m := p.(map[string]any)
			out[m["key"].(string)] = m["subscribed"].(bool)
		}
		return out
	}
	news := must("POST", "/v1/topics", map[string]any{"name": "Product news", "key": "news", "description": "<b>What we ship</b>"}, 201)
	must("POST", "/v1/topics", map[string]any{"name": "Tips & tricks", "key": "tips", "default_opt_in": false}, 201)
	must("POST", "/v1/topics", map[string]any{"name": "Account notices", "key": "account", "required": true}, 201)
	const ann = "ann@example.com"
	prefURL := local(must("GET", "/v1/topics/preferences?email="+ann, nil, 200)["preference_url"].(string))

	t.Run("preference page", func(t *testing.T) {
		b.Open(t, prefURL)
		text := b.WaitText(t, "Email preferences")
		if !strings.Contains(text, ann) || !strings.Contains(text, "Tips & tricks") || !strings.Contains(text, "<b>What we ship</b>") {
			t.Fatalf("page text:\n%s", text)
		}
		if n := browser.Eval[int](t, b, "document.querySelectorAll('script,link,img,iframe').length"); n != 0 {
			t.Fatalf("the page loads %d scripts or external assets", n)
		}
		if w := browser.Eval[int](t, b, "document.documentElement.scrollWidth"); w > 400 {
			t.Fatalf("the page is %dpx wide on a 390px phone", w)
		}
		// Switch news off and tips on, then save.
		b.Click(t, `input[value="news"]`)
		b.Click(t, `input[value="tips"]`)
		b.Click(t, `form:first-of-type button[type="submit"]`)
		b.WaitText(t, "Your preferences are saved.")
		if got := subscribed(ann); got["news"] || !got["tips"] || !got["account"] {
			t.Fatalf("after saving: %v", got)
		}
		if browser.Eval[bool](t, b, `document.querySelector('input[value="news"]').checked`) {
			t.Fatal("the saved page still shows news ticked")
		}
		// Unsubscribe from all: every topic but the required one goes off.
		b.Click(t, `button.secondary`)
		b.WaitText(t, "unsubscribed from all")
		if got := subscribed(ann); got["news"] || got["tips"] || !got["account"] {
			t.Fatalf("after unsubscribing from all: %v", got)
		}
	})

	t.Run("one-click page", func(t *testing.T) {
		const bob = "bob@example.com"
		link := local(a.Topics().UnsubscribeURL(a.WorkspaceID, news["id"].(string), bob, time.Now().Add(time.Hour)))
		must("POST", "/v1/topics/preferences", map[string]any{"email": bob, "topic": "tips", "subscribed": true}, 200)
		b.Open(t, link)
		text := b.WaitText(t, "Stop sending Product news to "+bob)
		if !strings.Contains(text, "You are unsubscribing from mail sent by Test workspace.") || !strings.Contains(text, "Everything from Test workspace") {
			t.Fatalf("page text:\n%s", text)
		}
		if !subscribed(bob)["news"] {
			t.Fatal("opening the page unsubscribed")
		}
		// "Only this topic": news goes off, tips stays on.
		b.Click(t, `form[data-scope="link"] button`)
		b.WaitText(t, "You will no longer receive Product news")
		if got := subscribed(bob); got["news"] || !got["tips"] {
			t.Fatalf("after only this topic: %v", got)
		}
	})

	t.Run("tampered and expired links", func(t *testing.T) {
		const cat = "cat@example.com"
		expired := local(a.Topics().UnsubscribeURL(a.WorkspaceID, news["id"].(string), cat, time.Now().Add(-time.Minute)))
		for _, link := range []string{prefURL[:len(prefURL)-4] + "AAAA", expired} {
			b.Open(t, link)
			b.WaitText(t, "This link is not valid or has expired")
			if n := browser.Eval[int](t, b, "document.forms.length"); n != 0 {
				t.Fatalf("a bad link's page offers %d forms", n)
			}
		}
		if !subscribed(cat)["news"] {
			t.Fatal("a bad link changed something")
		}
	})

	t.Run("double opt-in page", func(t *testing.T) {
		aud := must("POST", "/v1/audiences", map[string]any{"name": "Weekly"}, 201)["id"].(string)
		must("PATCH", "/v1/audiences/"+aud, map[string]any{"require_double_opt_in": true}, 200)
		must("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "delivered+doi@" + a.Config.ServiceDomain}}, 201)
		member := must("GET", "/v1/audiences/"+aud+"/contacts?status=pending", nil, 200)["contacts"].([]any)[0].(map[string]any)["id"].(string)
		link := local(must("POST", "/v1/audiences/"+aud+"/contacts/"+member+"/confirm", nil, 202)["confirm_url"].(string))
		status := func() any { return must("GET", "/v1/audiences/"+aud+"/contacts/"+member, nil, 200)["status"] }
		b.Open(t, link)
		b.WaitText(t, "Confirm that delivered+doi@")
		if status() != "pending" {
			t.Fatal("opening the confirmation page confirmed")
		}
		b.Click(t, `button[type="submit"]`)
		b.WaitText(t, "You are subscribed to Weekly")
		if got := status(); got != "subscribed" {
			t.Fatalf("member is %v after confirming in the browser", got)
		}
	})
}
