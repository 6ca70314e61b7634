package topics_test

import (
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestUnsubscribeAllRecordsOnContact: "unsubscribe from all" switches off
// every topic and unsubscribes the contact's memberships (pending ones
// too), leaves a cleaned one as it is, and creates no contact for an
// address that is not one.
func TestUnsubscribeAllRecordsOnContact(t *testing.T) {
	a := testapp.Start(t)
	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := a.Do(method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r.JSON()
	}
	must("POST", "/v1/topics", map[string]any{"name": "News"}, 201)
	var auds []string
	for _, name := range []string{"Weekly", "Monthly", "Old"} {
		auds = append(auds, must("POST", "/v1/audiences", map[string]any{"name": name}, 201)["id"].(string))
	}
	for i, status := range []string{"subscribed", "pending", "cleaned"} {
		must("POST", "/v1/audiences/"+auds[i]+"/contacts", []any{map[string]any{"email": "Ann@Example.com", "status": status}}, 201)
	}
	ct := must("GET", "/v1/contacts?lookup=ann@example.com", nil, 200)["contacts"].([]any)[0].(map[string]any)["id"].(string)
	topicsOf := func() []any {
		t.Helper()
		return must("GET", "/v1/contacts/"+ct+"/subscriptions", nil, 200)["subscriptions"].([]any)[0].(map[string]any)["topics"].([]any)
	}
	if got := topicsOf(); len(got) != 1 || got[0] != "news" {
		t.Fatalf("contact's topics before: %v", got)
	}
	must("POST", "/v1/topics/preferences", map[string]any{"email": "ann@example.com", "subscribed": false}, 200)
	if got := topicsOf(); len(got) != 0 {
		t.Fatalf("contact's topics after unsubscribing from all: %v", got)
	}
	for i, want := range []string{"unsubscribed", "unsubscribed", "cleaned"} {
		got := must("GET", "/v1/audiences/"+auds[i]+"/contacts", nil, 200)["contacts"].([]any)[0].(map[string]any)["status"]
		if got != want {
			t.Errorf("membership %d is %v, want %s", i, got, want)
		}
	}
	p := must("GET", "/v1/topics/preferences?email=ann@example.com", nil, 200)["preferences"].([]any)[0].(map[string]any)
	if p["subscribed"] != false {
		t.Fatalf("topic after unsubscribing from all: %v", p)
	}
	before := len(must("GET", "/v1/contacts", nil, 200)["contacts"].([]any))
	must("POST", "/v1/topics/preferences", map[string]any{"email": "stranger@example.com", "subscribed": false}, 200)
	if after := len(must("GET", "/v1/contacts", nil, 200)["contacts"].([]any)); after != before {
		t.Fatalf("unsubscribing a stranger made %d contacts out of %d", after, before)
	}
}
