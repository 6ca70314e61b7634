package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestDuplicatesAndMerge(t *testing.T) {
	a := testapp.Start(t)
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s := scenario.New(a)
	s.Errors = scenario.Flat
	s.Set("other", otherKey)
	create := func(name string, body map[string]any) sc {
		return sc{Name: "create " + name, Method: "POST", Path: "/v1/contacts", Body: body, Status: 201, Save: map[string]string{name: "id"}}
	}
	s.Run(t,
		create("ann", map[string]any{"email": "ann.lee@gmail.com", "first_name": "Ann", "last_name": "Lee", "tags": []any{"a"}, "attributes": map[string]any{"plan": "pro", "city": "Oslo"}}),
		create("ann2", map[string]any{"email": "annlee+news@googlemail.com", "tags": []any{"b"}, "attributes": map[string]any{"plan": "free", "lang": "no"}}),
		create("work", map[string]any{"email": "ann.lee@acme.test", "first_name": "ann", "last_name": "LEE"}),
		create("zed", map[string]any{"email": "zed@example.com", "first_name": "Zed", "last_name": "Lee"}),
		sc{Name: "pairs", Method: "GET", Path: "/v1/contacts/duplicates", Status: 200,
			Shape: shape{"has_more": false, "next_cursor": nil, "pairs": []any{
				shape{"reason": "same_address", "contacts": []any{shape{"id": scenario.Var("ann")}, shape{"id": scenario.Var("ann2")}}},
				shape{"reason": "same_name_and_local_part", "contacts": []any{shape{"id": scenario.Var("ann")}, shape{"id": scenario.Var("work")}}},
			}}},
		sc{Name: "a ranking: has_more without a cursor", Method: "GET", Path: "/v1/contacts/duplicates?limit=1", Status: 200,
			Shape: shape{"has_more": true, "next_cursor": nil, "pairs": scenario.Len(1)}},
		sc{Name: "audience", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "N"}, Status: 201, Save: map[string]string{"aud": "id"}, Errors: scenario.Nested},
		sc{Name: "audience two", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "M"}, Status: 201, Save: map[string]string{"aud2": "id"}, Errors: scenario.Nested},
		sc{Name: "members", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Status: 201, Errors: scenario.Nested,
			Body: []any{map[string]any{"email": "ann.lee@gmail.com", "status": "subscribed"}, map[string]any{"email": "annlee+news@googlemail.com", "status": "unsubscribed"}}},
		sc{Name: "members two", Method: "POST", Path: "/v1/audiences/{aud2}/contacts", Status: 201, Errors: scenario.Nested,
			Body: []any{map[string]any{"email": "annlee+news@googlemail.com", "attributes": map[string]any{"k": "v"}}}},
		sc{Name: "same contact twice", Method: "POST", Path: "/v1/contacts/duplicates", Body: map[string]any{"survivor_id": "{ann}", "loser_id": "{ann}"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "missing loser", Method: "POST", Path: "/v1/contacts/duplicates", Body: map[string]any{"survivor_id": "{ann}"}, Status: 400, Code: "invalid_request"},
		sc{Name: "another workspace's contacts", Method: "POST", Path: "/v1/contacts/duplicates", Key: "{other}",
			Body: map[string]any{"survivor_id": "{ann}", "loser_id": "{ann2}"}, Status: 404, Code: "not_found"},
		sc{Name: "merge", Method: "POST", Path: "/v1/contacts/duplicates", Body: map[string]any{"survivor_id": "{ann}", "loser_id": "{ann2}"},
			Status: 200, Shape: shape{"merged": true, "loser_id": scenario.Var("ann2"), "survivor": shape{"id": scenario.Var("ann"), "email": "ann.lee@gmail.com",
				"tags": []any{"a", "b"}, "attributes": shape{"plan": "pro", "city": "Oslo", "lang": "no"}}}},
		sc{Name: "loser gone", Method: "GET", Path: "/v1/contacts/{ann2}", Status: 404, Code: "not_found"},
		// The unsubscribe of the loser is not undone by the survivor's subscription.
		sc{Name: "memberships merged", Method: "GET", Path: "/v1/contacts/{ann}/subscriptions", Status: 200, Errors: scenario.Nested,
			Shape: shape{"subscriptions": []any{shape{"audiences": scenario.Len(2)}}},
			Check: func(t testing.TB, r *testapp.Response) {
				var v struct {
					Subscriptions []struct {
						Audiences []struct {
							AudienceID string `json:"audience_id"`
							Status     string `json:"status"`
						} `json:"audiences"`
					} `json:"subscriptions"`
				}
				r.Decode(t, &v)
				got := map[string]string{}
				for _, a := range v.Subscriptions[0].Audiences {
					got[a.AudienceID] = a.Status
				}
				if got[s.Get("aud")] != "unsubscribed" || got[s.Get("aud2")] != "subscribed" {
					t.Errorf("memberships after the merge: %v", got)
				}
			}},
		sc{Name: "one member left in the audience", Method: "GET", Path: "/v1/audiences/{aud}/contacts", Status: 200, Errors: scenario.Nested,
			Shape: shape{"contact_count": 1}},
		sc{Name: "no pair left by address", Method: "GET", Path: "/v1/contacts/duplicates", Status: 200,
			Shape: shape{"pairs": []any{shape{"reason": "same_name_and_local_part"}}}},
	)
	// The loser's history moved, and the survivor's new tag queued its event.
	events, err := contacts.New(a.DB, clock.Real{}).AutomationEvents(context.Background(), a.WorkspaceID, s.Get("ann"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Kind+" "+fmt.Sprint(e.Data["tag"]))
	}
	// (Imports queue only events an automation starts on: the memberships
	// the import made queued no member.subscribed.)
	if want := "contact.created <nil>,tag.added a,contact.created <nil>,tag.added b,tag.added b"; strings.Join(got, ",") != want {
		t.Fatalf("events %q, want %q", strings.Join(got, ","), want)
	}
}
