package topics_test

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// form is one form of a hosted page as a browser sees it: its
// data-scope, the fields it posts (hidden inputs) and its button's label.
type form struct {
	scope, button string
	fields        url.Values
}

// pageForms reads a hosted page's POST forms (none has an action: each
// posts to the page's own URL).
func pageForms(t *testing.T, page string) []form {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, k string) string {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val
			}
		}
		return ""
	}
	var out []form
	var walk func(n *html.Node, f *form)
	walk = func(n *html.Node, f *form) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				if attr(n, "action") != "" || !strings.EqualFold(attr(n, "method"), "post") {
					t.Fatalf("form %q posts elsewhere or not as POST", attr(n, "data-scope"))
				}
				out = append(out, form{scope: attr(n, "data-scope"), fields: url.Values{}})
				f = &out[len(out)-1]
			case "input":
				if f != nil && attr(n, "type") == "hidden" {
					f.fields.Add(attr(n, "name"), attr(n, "value"))
				}
			case "button":
				if f != nil && n.FirstChild != nil {
					f.button = strings.TrimSpace(n.FirstChild.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, f)
		}
	}
	walk(doc, nil)
	return out
}

func fetch(t *testing.T, method, link string, body url.Values) string {
	t.Helper()
	var r *http.Response
	var err error
	if method == "GET" {
		r, err = http.Get(link)
	} else {
		r, err = http.Post(link, "application/x-www-form-urlencoded", strings.NewReader(body.Encode()))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Fatalf("%s %s: %d\n%s", method, link, r.StatusCode, b)
	}
	return string(b)
}

// TestUnsubscribeChoices (#40 item 2), through HTTP as a browser and a
// mailbox provider would: the page of a topic mail names the sender (the
// workspace "Acme Inc") and offers "Only Product news" and "Everything
// from Acme Inc". Ann takes the first: news goes off, tips and her
// membership stay. Bob takes the second: every topic goes off and his
// membership is unsubscribed. The subscriptions view shows both. A
// topic-less broadcast's page offers the one choice, and its one-click
// unsubscribes Cat from the audience.
func TestUnsubscribeChoices(t *testing.T) {
	n := startNode(t)
	_, key := n.NewWorkspace("Acme Inc", "owner@acme-inc.example")
	n.VerifiedDomain(key, n.dns, "shop.example", nil)
	do := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := n.DoKey(key, method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
		}
		return r.JSON()
	}
	topicsOf := func(email string) map[string]bool {
		t.Helper()
		out := map[string]bool{}
		for _, p := range do("GET", "/v1/topics/preferences?email="+email, nil, 200)["preferences"].([]any) {
			out[p.(map[string]any)["key"].(string)] = p.(map[string]any)["subscribed"].(bool)
		}
		return out
	}
	// view is the contact's subscriptions: its topic keys and its one
	// membership's status.
	view := func(email string) (string, string) {
		t.Helper()
		s := do("GET", "/v1/contacts/"+email+"/subscriptions", nil, 200)["subscriptions"].([]any)[0].(map[string]any)
		var keys []string
		for _, k := range s["topics"].([]any) {
			keys = append(keys, k.(string))
		}
		slices.Sort(keys) // topics made in one millisecond list in id order, which is random
		return strings.Join(keys, ","), s["audiences"].([]any)[0].(map[string]any)["status"].(string)
	}
	do("POST", "/v1/topics", map[string]any{"name": "Product news", "key": "news"}, 201)
	do("POST", "/v1/topics", map[string]any{"name": "Tips", "key": "tips"}, 201)
	aud := do("POST", "/v1/audiences", map[string]any{"name": "Customers"}, 201)["id"].(string)
	do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "ann@rcpt.example"},
		map[string]any{"email": "bob@rcpt.example"}, map[string]any{"email": "cat@rcpt.example"}}, 201)
	if topics, status := view("bob@rcpt.example"); topics != "news,tips" || status != "subscribed" {
		t.Fatalf("before: topics %q, membership %s", topics, status)
	}

	do("POST", "/v1/emails", map[string]any{"from": "Acme <hello@shop.example>", "to": []string{"ann@rcpt.example", "bob@rcpt.example"},
		"subject": "News", "html": "<p>News</p>", "text": "News", "topic": "news"}, 200)
	msgs := n.sink.WaitFor(2, 15*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	link := map[string]string{}
	for _, m := range msgs {
		d := readDelivered(t, m.To, m.Data)
		link[d.rcpt] = n.local(d.oneClick)
	}

	// The page of a topic mail: the sender named, two choices. A GET
	// changes nothing.
	page := fetch(t, "GET", link["ann@rcpt.example"], nil)
	if !strings.Contains(page, "You are unsubscribing from mail sent by Acme Inc.") {
		t.Fatalf("the page does not name the sender:\n%s", page)
	}
	fs := pageForms(t, page)
	if len(fs) != 2 || fs[0].scope != "link" || fs[0].button != "Only Product news" || fs[0].fields.Get("List-Unsubscribe") != "One-Click" ||
		fs[1].scope != "everything" || fs[1].button != "Everything from Acme Inc" {
		t.Fatalf("forms %+v", fs)
	}
	if got := topicsOf("ann@rcpt.example"); !got["news"] {
		t.Fatal("opening the page unsubscribed")
	}

	// Ann: only this topic.
	done := fetch(t, "POST", link["ann@rcpt.example"], fs[0].fields)
	if !strings.Contains(done, "You will no longer receive Product news from Acme Inc at ann@rcpt.example.") {
		t.Fatalf("after only this topic:\n%s", done)
	}
	if after := pageForms(t, done); len(after) != 1 || after[0].scope != "everything" {
		t.Fatalf("after only this topic, forms %+v (want everything still offered)", after)
	}
	if got := topicsOf("ann@rcpt.example"); got["news"] || !got["tips"] {
		t.Fatalf("ann after only this topic: %v", got)
	}
	if topics, status := view("ann@rcpt.example"); topics != "tips" || status != "subscribed" {
		t.Fatalf("ann's subscriptions: topics %q, membership %s", topics, status)
	}

	// Bob: everything from the sender.
	bobForms := pageForms(t, fetch(t, "GET", link["bob@rcpt.example"], nil))
	done = fetch(t, "POST", link["bob@rcpt.example"], bobForms[1].fields)
	if !strings.Contains(done, "You will no longer receive any email from Acme Inc at bob@rcpt.example.") || len(pageForms(t, done)) != 0 {
		t.Fatalf("after everything:\n%s", done)
	}
	if got := topicsOf("bob@rcpt.example"); got["news"] || got["tips"] {
		t.Fatalf("bob after everything: %v", got)
	}
	if topics, status := view("bob@rcpt.example"); topics != "" || status != "unsubscribed" {
		t.Fatalf("bob's subscriptions: topics %q, membership %s", topics, status)
	}
	if !topicsOf("ann@rcpt.example")["tips"] {
		t.Fatal("bob's choice reached ann")
	}

	// The preference page names the sender too.
	pref := fetch(t, "GET", n.local(do("GET", "/v1/topics/preferences?email=ann@rcpt.example", nil, 200)["preference_url"].(string)), nil)
	if !strings.Contains(pref, "You are choosing which mail you receive from Acme Inc.") {
		t.Fatalf("preference page:\n%s", pref)
	}

	// A broadcast without a topic reaches Ann and Cat (Bob left); Cat's
	// page offers one choice, and the provider's one-click unsubscribes
	// Cat from the audience.
	b := do("POST", "/v1/broadcasts", map[string]any{"name": "Hello", "audience_id": aud, "from": "Acme <hello@shop.example>",
		"subject": "Hello", "html": "<p>Hello</p>"}, 201)["id"].(string)
	do("POST", "/v1/broadcasts/"+b+"/send", nil, 200)
	msgs = n.sink.WaitFor(4, 15*time.Second)
	if len(msgs) != 4 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	var cat string
	for _, m := range msgs[2:] {
		if d := readDelivered(t, m.To, m.Data); d.rcpt == "cat@rcpt.example" {
			cat = n.local(d.oneClick)
		}
	}
	if cat == "" {
		t.Fatal("the broadcast did not reach cat")
	}
	fs = pageForms(t, fetch(t, "GET", cat, nil))
	if len(fs) != 1 || fs[0].button != "Unsubscribe from everything from Acme Inc" {
		t.Fatalf("topic-less page forms %+v", fs)
	}
	fetch(t, "POST", cat, url.Values{"List-Unsubscribe": {"One-Click"}})
	if _, status := view("cat@rcpt.example"); status != "unsubscribed" {
		t.Fatalf("cat's membership is %s after one-click", status)
	}
	if _, status := view("ann@rcpt.example"); status != "subscribed" {
		t.Fatalf("ann's membership is %s after cat's one-click", status)
	}
}
