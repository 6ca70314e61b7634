package inbound_test

import (
	"testing"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

func TestMailboxAndIdentityRoutes(t *testing.T) {
	dns := dnstest.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()))
	withMX := a.VerifiedDomain(a.Key, dns, "mx.example.com", nil)
	noMX := a.VerifiedDomain(a.Key, dns, "nomx.example.com", func(r dnstest.Record) bool {
		return r.Type != "MX" || r.Name != "nomx.example.com" // the bounce subdomain's MX is required
	})
	_, otherKey := a.NewWorkspace("Other", "o@example.com")
	s := scenario.New(a)
	s.Set("other", otherKey)
	s.Set("withMX", withMX)
	s.Set("noMX", noMX)
	s.Run(t,
		sc{Name: "default mailbox", Method: "GET", Path: "/v1/mailboxes", Status: 200,
			Shape: shape{"mailboxes": []any{shape{"address": scenario.Prefix("inbox@"), "unread_count": 0, "id": scenario.Prefix("mbx_")}}},
			Save:  map[string]string{"inbox": "mailboxes.0.id", "inboxAddr": "mailboxes.0.address"}},
		sc{Name: "local part", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "Support", "name": "Support desk"}, Status: 201,
			Shape: shape{"id": scenario.Prefix("mbx_"), "address": scenario.Prefix("support@"), "name": "Support desk", "unread_count": 0, "created_at": scenario.Present},
			Save:  map[string]string{"support": "id", "supportAddr": "address"}},
		sc{Name: "taken", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "support"}, Status: 409, Code: "mailbox_exists"},
		sc{Name: "taken as address", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"address": "{supportAddr}"}, Status: 409, Code: "mailbox_exists"},
		sc{Name: "custom domain with MX", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"address": "Hello@MX.example.com"}, Status: 201,
			Shape: shape{"address": "hello@mx.example.com", "domain_id": scenario.Var("withMX"), "name": ""}, Save: map[string]string{"hello": "id"}},
		sc{Name: "custom domain without MX", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"address": "a@nomx.example.com"}, Status: 422, Code: "domain_not_verified"},
		sc{Name: "foreign domain", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"address": "a@elsewhere.example"}, Status: 422, Code: "domain_not_verified"},
		sc{Name: "nothing", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"name": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "both", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"address": "a@b.c", "local_part": "a"}, Status: 400, Code: "invalid_request"},
		sc{Name: "plus in local part", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "a+b"}, Status: 400, Code: "invalid_request"},
		sc{Name: "bad address", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"address": "not an address"}, Status: 400, Code: "invalid_request"},
		sc{Name: "get one", Method: "GET", Path: "/v1/mailboxes/{support}", Status: 200, Shape: shape{"id": scenario.Var("support"), "address": scenario.Var("supportAddr")}},
		sc{Name: "other workspace's id", Method: "GET", Path: "/v1/mailboxes/{support}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "other workspace deletes", Method: "DELETE", Path: "/v1/mailboxes/{support}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "domain in use", Method: "DELETE", Path: "/v1/domains/{withMX}", Status: 409, Code: "domain_in_use", Shape: shape{"error": shape{"mailboxes": 1}}},
		sc{Name: "domain without mailboxes goes", Method: "DELETE", Path: "/v1/domains/{noMX}", Status: 200},

		// Keys bound to a mailbox.
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "support", "mailbox_id": "{support}"}, Status: 201,
			Shape: shape{"mailbox_id": scenario.Var("support")}, Save: map[string]string{"bound": "key", "boundID": "id"}},
		sc{Name: "unbound key lists null", Method: "GET", Path: "/v1/api-keys", Status: 200, Shape: shape{"api_keys": []any{shape{"mailbox_id": nil}, shape{"mailbox_id": scenario.Var("support")}}}},
		sc{Name: "key for another workspace's mailbox", Method: "POST", Path: "/v1/api-keys", Key: "{other}", Body: map[string]any{"name": "x", "mailbox_id": "{support}"}, Status: 404, Code: "not_found"},
		sc{Name: "bound key lists its own", Method: "GET", Path: "/v1/mailboxes", Key: "{bound}", Status: 200,
			Shape: shape{"mailboxes": []any{shape{"id": scenario.Var("support")}}}},
		sc{Name: "bound key reads another", Method: "GET", Path: "/v1/mailboxes/{inbox}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key deletes another", Method: "DELETE", Path: "/v1/mailboxes/{inbox}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key creates", Method: "POST", Path: "/v1/mailboxes", Key: "{bound}", Body: map[string]any{"local_part": "x"}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "bound key binds a key elsewhere", Method: "POST", Path: "/v1/api-keys", Key: "{bound}", Body: map[string]any{"name": "x", "mailbox_id": "{inbox}"}, Status: 404, Code: "not_found"},
		sc{Name: "bound key's keys are bound", Method: "POST", Path: "/v1/api-keys", Key: "{bound}", Body: map[string]any{"name": "x"}, Status: 201,
			Shape: shape{"mailbox_id": scenario.Var("support")}},

		// Identity and rules.
		sc{Name: "identity unbound", Method: "GET", Path: "/v1/identity", Status: 200, Shape: shape{"key_id": scenario.Present, "mailbox": nil, "rules": scenario.Len(0)}},
		sc{Name: "identity bound", Method: "GET", Path: "/v1/identity", Key: "{bound}", Status: 200,
			Shape: shape{"key_id": scenario.Var("boundID"), "mailbox": shape{"id": scenario.Var("support")}, "rules": scenario.Len(0)}},
		sc{Name: "rules unbound", Method: "PUT", Path: "/v1/identity/rules", Body: map[string]any{"rules": []any{}}, Status: 422, Code: "no_mailbox"},
		sc{Name: "rules set", Method: "PUT", Path: "/v1/identity/rules", Key: "{bound}", Status: 200,
			Body: map[string]any{"rules": []any{
				map[string]any{"match": map[string]any{"from": "@Spam.example"}, "action": "drop"},
				map[string]any{"match": map[string]any{"subject": "newsletter", "to": "support@x.example"}, "action": "archive"},
			}},
			Shape: shape{"rules": []any{shape{"match": shape{"from": "@spam.example"}, "action": "drop"}, shape{"match": shape{"subject": "newsletter", "to": "support@x.example"}, "action": "archive"}},
				"mailbox": shape{"id": scenario.Var("support")}}},
		sc{Name: "rules read back", Method: "GET", Path: "/v1/identity", Key: "{bound}", Status: 200, Shape: shape{"rules": scenario.Len(2)}},
		sc{Name: "rules bad action", Method: "PUT", Path: "/v1/identity/rules", Key: "{bound}", Body: map[string]any{"rules": []any{map[string]any{"match": map[string]any{}, "action": "explode"}}}, Status: 400, Code: "invalid_request"},
		sc{Name: "rules bad from", Method: "PUT", Path: "/v1/identity/rules", Key: "{bound}", Body: map[string]any{"rules": []any{map[string]any{"match": map[string]any{"from": "nobody"}, "action": "drop"}}}, Status: 400, Code: "invalid_request"},
		sc{Name: "rules missing", Method: "PUT", Path: "/v1/identity/rules", Key: "{bound}", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "rules cleared", Method: "PUT", Path: "/v1/identity/rules", Key: "{bound}", Body: map[string]any{"rules": []any{}}, Status: 200, Shape: shape{"rules": scenario.Len(0)}},

		sc{Name: "delete", Method: "DELETE", Path: "/v1/mailboxes/{hello}", Status: 200, Shape: shape{"id": scenario.Var("hello"), "deleted": true}},
		sc{Name: "delete again", Method: "DELETE", Path: "/v1/mailboxes/{hello}", Status: 404, Code: "not_found"},
		sc{Name: "domain free now", Method: "DELETE", Path: "/v1/domains/{withMX}", Status: 200},
		sc{Name: "deleted default stays deleted", Method: "DELETE", Path: "/v1/mailboxes/{inbox}", Status: 200},
		sc{Name: "list after", Method: "GET", Path: "/v1/mailboxes", Status: 200, Shape: shape{"mailboxes": []any{shape{"id": scenario.Var("support")}}}},
		sc{Name: "other workspace has its own inbox", Method: "GET", Path: "/v1/mailboxes", Key: "{other}", Status: 200,
			Shape: shape{"mailboxes": []any{shape{"address": scenario.Prefix("inbox@other-")}}}},
	)
}
