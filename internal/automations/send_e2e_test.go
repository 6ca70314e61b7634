package automations_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/wait"
)

var unsubLink = regexp.MustCompile(`https?://[^\s"<>]+/unsubscribe/[A-Za-z0-9_\-.]+`)

// TestSendSpeaksToThePerson: a member.subscribed automation, written as a
// user writes it, greets each new member by name (the default when there is
// none; Mailchimp's *|FNAME|* too), with the audience's merge fields and the
// trigger's data. Its marketing sends carry the member's own one-click
// headers and body link (the footer when the body has none; a topic step
// the topic's own link), which open the hosted page and unsubscribe that
// member; a transactional step carries neither. Read back from a real SMTP
// sink.
func TestSendSpeaksToThePerson(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink)) // mail for rcpt.example lands in sink
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	for _, tpl := range []map[string]any{
		{"name": "Welcome", "subject": "Welcome *|FNAME|*", "publish": true,
			"html": `<html><body><p>Hi {{ first_name | default: "there" }}!</p><p><a href="{{ unsubscribe_url }}">Leave</a> · <a href="*|UPDATE_PROFILE|*">Choose</a></p></body></html>`},
		{"name": "News", "subject": "News", "publish": true,
			"html": `<p>News for *|FNAME|* at {{ company | default: "your team" }}</p>`, "text": `News for {{ first_name | default: "you" }}`},
		{"name": "Tips", "subject": "Tips", "publish": true, "text": "A tip"},
		{"name": "Receipt", "subject": "Receipt for {{ email }}", "publish": true,
			"html": `<p>Joined {{ trigger.audience_id }}</p>`, "text": `Joined {{ trigger.audience_id }}`},
	} {
		must(t, a.Do("POST", "/v1/templates", tpl), 201)
	}
	must(t, a.Do("POST", "/v1/topics", map[string]any{"name": "Tips", "key": "tips"}), 201)
	aud := must(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}), 201)["id"].(string)
	aut := createAutomation(t, a, `name: Welcome series
trigger:
  event: member.subscribed
  audience_id: `+aud+`
steps:
  - send:
      template: welcome
      from: Acme <hi@acme.example>
  - send: { template: news, from: hi@acme.example }
  - send: { template: tips, from: hi@acme.example, topic: tips }
  - send:
      template: receipt
      from: hi@acme.example
      transactional: true     # a receipt: no unsubscribe link
`)["id"].(string)
	must(t, a.Do("POST", "/v1/audiences/"+aud+"/contacts", []any{
		map[string]any{"email": "ada@rcpt.example", "first_name": "Ada", "attributes": map[string]any{"Company": "Analytical"}},
		map[string]any{"email": "bob@rcpt.example"},
	}), 201)
	var rs []any
	if !wait.Until(20*time.Second, func() bool {
		rs = must(t, a.Do("GET", "/v1/automations/"+aut+"/runs", nil), 200)["runs"].([]any)
		done := 0
		for _, r := range rs {
			if s := r.(map[string]any)["status"]; s != "running" && s != "waiting" {
				done++
			}
		}
		return len(rs) == 2 && done == 2
	}) {
		t.Fatalf("runs did not finish: %v", rs)
	}
	for _, r := range rs {
		run := must(t, a.Do("GET", "/v1/automations/"+aut+"/runs/"+r.(map[string]any)["run_id"].(string), nil), 200)
		if got := stepSummary(run); got != "send:completed send:completed send:completed send:completed" {
			t.Fatalf("run %v: %s %v", run["status"], got, run["error"])
		}
	}
	msgs := sink.WaitFor(8, 20*time.Second)
	if len(msgs) != 8 {
		t.Fatalf("sink got %d messages, want 8", len(msgs))
	}
	type mail struct{ subject, lu, post, html, text string }
	got := map[string]mail{} // "ada@rcpt.example Welcome Ada" -> its parts
	for _, m := range msgs {
		h, html, text := smtpsink.Parts(t, m.Data)
		subj := strings.Fields(h.Get("Subject"))[0]
		got[m.To[0]+" "+subj] = mail{h.Get("Subject"), h.Get("List-Unsubscribe"), h.Get("List-Unsubscribe-Post"), html, text}
	}
	for _, who := range []struct{ to, name, company string }{{"ada@rcpt.example", "Ada", "Analytical"}, {"bob@rcpt.example", "there", "your team"}} {
		w := got[who.to+" Welcome"]
		links := unsubLink.FindAllString(w.html, -1)
		if !strings.Contains(w.html, "<p>Hi "+who.name+"!</p>") || w.subject != strings.TrimSpace("Welcome "+map[string]string{"Ada": "Ada"}[who.name]) || len(links) != 1 || w.lu != "<"+links[0]+">" && !strings.HasPrefix(w.lu, "<"+links[0]+">,") ||
			w.post != "List-Unsubscribe=One-Click" || strings.Contains(w.html, "mailroom-unsubscribe-footer") || !strings.Contains(w.html, "/preferences/") {
			t.Fatalf("%s welcome: List-Unsubscribe %q %q, links %v\n%s", who.to, w.lu, w.post, links, w.html)
		}
		n := got[who.to+" News"]
		first := map[string]string{"Ada": "Ada", "there": ""}[who.name]
		link := strings.TrimPrefix(strings.SplitN(n.lu, ">", 2)[0], "<")
		if !strings.Contains(n.html, "News for "+first+" at "+who.company) || strings.Count(n.html, "mailroom-unsubscribe-footer") != 1 ||
			!strings.Contains(n.html, link) || strings.Count(n.text, link) != 1 || n.post == "" || link == "" {
			t.Fatalf("%s news: %q\n%s\n%s", who.to, n.lu, n.html, n.text)
		}
		if who.name == "there" && !strings.HasPrefix(n.text, "News for you") {
			t.Fatalf("%s news text: %s", who.to, n.text)
		}
		// Under a topic, the link is the topic's own (its one-click leaves
		// the topic only), in the header and the text footer alike.
		tp := got[who.to+" Tips"]
		tl := strings.TrimPrefix(strings.SplitN(tp.lu, ">", 2)[0], "<")
		if tl == "" || tl == link || tp.post == "" || !strings.Contains(tp.text, "Unsubscribe: "+tl) {
			t.Fatalf("%s topic send: %q (the audience's %q)\n%s", who.to, tp.lu, link, tp.text)
		}
		r := got[who.to+" Receipt"]
		if r.lu != "" || r.post != "" || strings.Contains(r.html, "unsubscribe") || strings.Contains(r.text, "Unsubscribe") || !strings.Contains(r.html, "Joined "+aud) {
			t.Fatalf("%s transactional receipt: %q %q\n%s\n%s", who.to, r.lu, r.post, r.html, r.text)
		}
	}
	if got["ada@rcpt.example Welcome"].lu == got["bob@rcpt.example Welcome"].lu {
		t.Fatal("two members got the same link")
	}

	// Ada opens her link (the hosted page), then her mail client posts the
	// one-click: she alone leaves the audience.
	l := unsubLink.FindString(got["ada@rcpt.example Welcome"].html)
	link := a.URL + "/unsubscribe/" + strings.SplitN(l, "/unsubscribe/", 2)[1] // the links name MAILROOM_PUBLIC_URL
	if r, err := http.Get(link); err != nil || r.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", link, err, r)
	}
	if r, err := http.Post(link, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click")); err != nil || r.StatusCode >= 300 {
		t.Fatalf("one-click: %v %v", err, r)
	}
	var members struct {
		Contacts []struct{ Email, Status string }
	}
	a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).Decode(t, &members)
	for _, m := range members.Contacts {
		if want := map[bool]string{true: "unsubscribed", false: "subscribed"}[m.Email == "ada@rcpt.example"]; m.Status != want {
			t.Fatalf("%s is %s after Ada's one-click", m.Email, m.Status)
		}
	}
}
