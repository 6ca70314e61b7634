package dashboard_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

var olderLink = regexp.MustCompile(`id="older-[a-z]+" href="([^"]+)"`)

// older follows a page's "Older →" link, or returns "" when it has none.
func older(t *testing.T, p page) string {
	t.Helper()
	m := olderLink.FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// TestListsPageAndSearch (#43 item 3): contacts, members, conversations,
// webhook deliveries and logs page with "Older →" links to their end and
// search or filter; an email's page lists its attachments, downloaded as
// sent, and the webhook deliveries of its events.
func TestListsPageAndSearch(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(hook.Close)
	hookID := a.Do("POST", "/v1/webhooks", map[string]any{"url": hook.URL + "/h", "events": []string{"email.sent", "email.delivered"}}).JSON()["id"].(string)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "Many"}).JSON()["id"].(string)
	var rows []any
	for i := range 55 {
		rows = append(rows, map[string]any{"email": fmt.Sprintf("person%02d@example.net", i)})
	}
	rows = append(rows, map[string]any{"email": "zelda@example.org", "first_name": "Zelda", "subscribed": false})
	if r := a.Do("POST", "/v1/audiences/"+aud+"/contacts", rows); r.Status != 201 {
		t.Fatalf("import %d %s", r.Status, r.Body)
	}
	v := newVisitor(t, a)
	v.signIn(a.Key)

	// Contacts and members: 50, then the rest, each address once.
	for _, first := range []string{"/contacts", "/audiences/" + aud} {
		seen := map[string]bool{}
		next := first
		for pages := 0; next != ""; pages++ {
			if pages > 3 {
				t.Fatalf("%s: the pages never end", first)
			}
			p := v.get(next)
			want(t, p, http.StatusOK)
			for _, m := range regexp.MustCompile(`person\d\d@example\.net|zelda@example\.org`).FindAllString(p.body, -1) {
				seen[m] = true
			}
			next = older(t, p)
		}
		if len(seen) != 56 {
			t.Fatalf("%s: %d addresses over the pages, want 56", first, len(seen))
		}
	}
	p := v.get("/contacts?q=zeld")
	want(t, p, http.StatusOK, "zelda@example.org")
	link := regexp.MustCompile(`href="(/contacts/[^"]+)">zelda@example.org`).FindStringSubmatch(p.body)
	if link == nil {
		t.Fatalf("the contact's row does not link to its page:\n%s", p.body)
	}
	want(t, v.get(link[1]), http.StatusOK, "zelda@example.org", "Subscriptions", "unsubscribed", `href="/emails?recipient=zelda%40example.org"`)
	if strings.Contains(p.body, "person01") {
		t.Fatal("the search shows what it does not match")
	}
	p = v.get("/audiences/" + aud + "?status=unsubscribed")
	want(t, p, http.StatusOK, "zelda@example.org")
	if strings.Contains(p.body, "person01") || older(t, p) != "" {
		t.Fatal("the status filter shows other members")
	}
	p = v.get("/audiences/" + aud + "?email=ZELDA%40")
	want(t, p, http.StatusOK, "zelda@example.org")
	if strings.Contains(p.body, "person01") || older(t, p) != "" {
		t.Fatal("the address search shows other members")
	}
	p = v.get("/audiences/" + aud + "?email=50%25_off")
	if !strings.Contains(p.body, "No members matching 50%_off") {
		t.Fatal("% and _ are not wildcards in the address search")
	}

	// An email's attachments and its events' webhook deliveries.
	content := "col\n1\n"
	r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "With a file", "text": "x",
		"attachments": []any{map[string]any{"filename": "report.csv", "content": base64.StdEncoding.EncodeToString([]byte(content))}}})
	email := r.JSON()["id"].(string)
	testapp.Eventually(t, 15*time.Second, func() bool {
		return strings.Count(v.get("/emails/"+email).body, `href="/webhooks/`+hookID+`"`) >= 2
	}, "the email's page never listed the deliveries of email.sent and email.delivered")
	p = v.get("/emails/" + email)
	want(t, p, http.StatusOK, `href="/emails/`+email+`/attachments/1"`, "report.csv", "email.delivered")
	d := v.get("/emails/" + email + "/attachments/1")
	if d.status != 200 || d.body != content || !strings.Contains(d.header.Get("Content-Disposition"), `attachment; filename=report.csv`) {
		t.Fatalf("download: %d %v %q", d.status, d.header, d.body)
	}
	want(t, v.get("/emails/"+email+"/attachments/2"), http.StatusNotFound)
	// The webhook's deliveries filter by event.
	p = v.get("/webhooks/" + hookID + "?event=email.sent")
	want(t, p, http.StatusOK, "email.sent", `<a href="/emails/`+email+`">`) // each row links to its email
	if strings.Contains(p.body, "<strong>email.delivered</strong>") {
		t.Fatal("the event filter shows another event")
	}

	want(t, v.get("/inbox?q=nothing+like+it"), http.StatusOK, "No message matches")
	want(t, v.get("/inbox?after=bad"), http.StatusBadRequest, "page link")

	// Logs: the path filter.
	testapp.Eventually(t, 10*time.Second, func() bool {
		p = v.get("/logs?path=/v1/audiences")
		return strings.Contains(p.body, `<td class="break">/v1/audiences`)
	}, "the request log never showed the audience calls") // written off the request path
	if strings.Contains(p.body, `<td class="break">/v1/emails`) {
		t.Fatal("the path filter shows other paths")
	}
}
