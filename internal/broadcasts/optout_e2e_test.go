package broadcasts_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
)

var httpsLink = regexp.MustCompile(`https?://[^\s"<>]+/(?:unsubscribe|preferences)/[A-Za-z0-9_\-.]+`)

// TestOptOutInEveryBody: a broadcast body's {{ unsubscribe_url }}
// (Mailchimp's *|UNSUB|*) and {{ preferences_url }} are each recipient's own
// signed links, the same as their List-Unsubscribe header's; following one
// unsubscribes that recipient only. A body without a link gets a footer
// with it, once, in both parts; a test send carries the test address's
// links, never a member's.
func TestOptOutInEveryBody(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 3)
	body := `<html><body><p>Hi *|FNAME|*</p><p><a href="*|UNSUB|*">Leave</a> or <a href="{{ preferences_url }}">choose</a></p></body></html>`
	id := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"name": "links", "audience_id": aud, "from": sandbox,
		"subject": "News for *|FNAME|*", "html": body}), 201)["id"].(string)
	pv := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+id+"/preview", nil), 200)
	if strings.Contains(pv["html"].(string), "*|") || !strings.Contains(pv["html"].(string), "/unsubscribe/") {
		t.Fatalf("preview: %v", pv["html"])
	}
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/send", nil), 200)
	msgs := sink.WaitFor(3, 15*time.Second)
	if len(msgs) != 3 {
		t.Fatalf("sink got %d", len(msgs))
	}
	links := map[string]string{} // recipient -> unsubscribe link in the body
	for _, m := range msgs {
		h, html, text := smtpsink.Parts(t, m.Data)
		rcpt := m.To[0]
		found := httpsLink.FindAllString(html, -1)
		if len(found) != 2 || !strings.Contains(found[0], "/unsubscribe/") || !strings.Contains(found[1], "/preferences/") {
			t.Fatalf("%s: links in the html %v\n%s\n%s", rcpt, found, html, m.Data)
		}
		if lu := h.Get("List-Unsubscribe"); !strings.HasPrefix(lu, "<"+found[0]+">") {
			t.Fatalf("%s: body link %s is not the header's %s", rcpt, found[0], lu)
		}
		if strings.Contains(html, "mailroom-unsubscribe-footer") || strings.Count(text, "Unsubscribe:") > 1 {
			t.Fatalf("%s: a footer beside the body's own link:\n%s\n%s", rcpt, html, text)
		}
		if !strings.Contains(html, "Hi Name") || !strings.Contains(h.Get("Subject"), "News for Name") {
			t.Fatalf("%s: *|FNAME|* not rendered: %s", rcpt, html)
		}
		links[rcpt] = found[0]
	}
	// The first member opens their link (the hosted page), then posts the
	// one-click: only they are unsubscribed.
	first := "m00000@example.net"
	// The links name MAILROOM_PUBLIC_URL; this node listens elsewhere.
	link := a.URL + "/unsubscribe/" + strings.SplitN(links[first], "/unsubscribe/", 2)[1]
	if r, err := http.Get(link); err != nil || r.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", link, err, r)
	}
	r, err := http.Post(link, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil || r.StatusCode >= 300 {
		t.Fatalf("one-click: %v %v", err, r)
	}
	var members struct {
		Contacts []struct{ Email, Status string }
	}
	a.Do(http.MethodGet, "/v1/audiences/"+aud+"/contacts", nil).Decode(t, &members)
	for _, m := range members.Contacts {
		if want := map[bool]string{true: "unsubscribed", false: "subscribed"}[m.Email == first]; m.Status != want {
			t.Fatalf("%s is %s after %s's one-click", m.Email, m.Status, first)
		}
	}

	// A body with no link of its own gets the footer, once, in both parts.
	id = mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"name": "plain", "audience_id": aud, "from": sandbox,
		"subject": "Plain", "html": "<p>No link here</p>"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/send", nil), 200)
	msgs = sink.WaitFor(5, 15*time.Second)[3:] // the sink keeps every message: these are the next two (one member left)
	for _, m := range msgs {
		h, html, text := smtpsink.Parts(t, m.Data)
		link := strings.TrimPrefix(strings.SplitN(h.Get("List-Unsubscribe"), ">", 2)[0], "<")
		if strings.Count(html, "mailroom-unsubscribe-footer") != 1 || !strings.Contains(html, link) || strings.Count(text, link) != 1 {
			t.Fatalf("%s: footer missing or twice:\n%s\n%s", m.To[0], html, text)
		}
	}

	// A test send: each address gets its own links.
	tid := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"name": "t", "audience_id": aud, "from": sandbox, "subject": "T", "html": body}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+tid+"/test", map[string]any{"to": []string{"qa1@example.org", "qa2@example.org"}}), 200)
	for _, m := range sink.WaitFor(7, 15*time.Second)[5:] {
		_, html, _ := smtpsink.Parts(t, m.Data)
		for _, l := range httpsLink.FindAllString(html, -1) {
			for _, member := range links {
				if l == member {
					t.Fatalf("test send to %s carries a member's link", m.To[0])
				}
			}
		}
		if len(httpsLink.FindAllString(html, -1)) != 2 {
			t.Fatalf("test send to %s: %s", m.To[0], html)
		}
	}
}
