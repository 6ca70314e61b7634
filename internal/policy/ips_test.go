package policy_test

import (
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

// TestDedicatedIPRoutes: the inventory (MAILROOM_IPS), taking and handing
// back, the warm-up schedule, PATCH's two fields and its bad input, the
// reverse DNS check through MAILROOM_DNS_RESOLVER, and another workspace's
// ids and addresses answering 404.
func TestDedicatedIPRoutes(t *testing.T) {
	dns := dnstest.Start(t)
	// 192.0.2.10 has a PTR that resolves back; 192.0.2.11's PTR does not.
	dns.AddPTR("192.0.2.10", "mail.mailroom.test")
	dns.AddA("mail.mailroom.test", "192.0.2.10")
	dns.AddPTR("192.0.2.11", "static.isp.example")
	dns.AddPTR("192.0.2.11", "other.isp.example") // two PTRs: actual is the first
	c := clock.NewFake(noon)
	a := testapp.Start(t, testapp.WithClock(c), testapp.WithEnv("MAILROOM_IPS", "192.0.2.10, 192.0.2.11,2001:db8::1"),
		testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()), testapp.WithEnv("MAILROOM_OUTBOUND_IPS", "198.51.100.7"))
	_, other := a.NewWorkspace("Other", "other@example.com")
	s := scenario.New(a)
	s.Set("other", other)
	s.Run(t,
		sc{Name: "empty list", Method: "GET", Path: "/v1/ips", Status: 200, Shape: shape{
			"default_region": "local", "residency": "self-hosted", "ips": scenario.Len(0),
			"shared_pools": []any{map[string]any{"id": "shared", "default": true, "ips": []any{"198.51.100.7"}}}}},
		sc{Name: "take a given one", Method: "POST", Path: "/v1/ips", Body: map[string]any{"ip": "192.0.2.10"}, Status: 201,
			Shape: shape{"id": scenario.Prefix("ip_"), "ip": "192.0.2.10", "paused": false, "daily_cap": nil,
				"warmup": shape{"day": 1.0, "allowance": 50.0}, "sent_today": 0.0, "reverse_dns": scenario.Absent},
			Save: map[string]string{"ip1": "id"}},
		sc{Name: "taking it again answers it", Method: "POST", Path: "/v1/ips", Body: map[string]any{"ip": "192.0.2.10"}, Status: 200,
			Shape: shape{"id": scenario.Var("ip1")}},
		sc{Name: "another workspace cannot take it", Key: "{other}", Method: "POST", Path: "/v1/ips", Body: map[string]any{"ip": "192.0.2.10"},
			Status: 404, Code: "not_found"},
		sc{Name: "not in the inventory", Method: "POST", Path: "/v1/ips", Body: map[string]any{"ip": "203.0.113.9"}, Status: 404, Code: "not_found"},
		sc{Name: "not an address", Method: "POST", Path: "/v1/ips", Body: map[string]any{"ip": "mail.example"}, Status: 400, Code: "invalid_request"},
		sc{Name: "any free one (no body)", Method: "POST", Path: "/v1/ips", Status: 201, Shape: shape{"ip": "192.0.2.11"},
			Save: map[string]string{"ip2": "id"}},
		sc{Name: "the other workspace gets the last", Key: "{other}", Method: "POST", Path: "/v1/ips", Body: `{}`, Status: 201,
			Shape: shape{"ip": "2001:db8::1"}, Save: map[string]string{"ip3": "id"}},
		sc{Name: "inventory empty", Method: "POST", Path: "/v1/ips", Body: `{}`, Status: 409, Code: "no_ip_available"},
		sc{Name: "list", Method: "GET", Path: "/v1/ips", Status: 200, Shape: shape{"ips": scenario.Len(2)}},
		sc{Name: "reverse dns confirmed", Method: "GET", Path: "/v1/ips/{ip1}", Status: 200, Shape: shape{
			"reverse_dns": shape{"expected": "mail.mailroom.test", "actual": "mail.mailroom.test", "actual_all": []any{"mail.mailroom.test"}, "forward_confirmed": true}}},
		sc{Name: "reverse dns not confirmed", Method: "GET", Path: "/v1/ips/{ip2}", Status: 200, Shape: shape{
			"reverse_dns": shape{"actual": "static.isp.example", "actual_all": []any{"static.isp.example", "other.isp.example"}, "forward_confirmed": false}}},
		sc{Name: "no PTR: actual null", Key: "{other}", Method: "GET", Path: "/v1/ips/{ip3}", Status: 200, Shape: shape{
			"reverse_dns": shape{"expected": "mail.mailroom.test", "actual": nil, "actual_all": []any{}, "forward_confirmed": false}}},
		sc{Name: "another workspace's id", Method: "GET", Path: "/v1/ips/{ip3}", Status: 404, Code: "not_found"},
		sc{Name: "pause and cap", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: map[string]any{"paused": true, "daily_cap": 20}, Status: 200,
			Shape: shape{"paused": true, "daily_cap": 20.0, "warmup": shape{"allowance": 50.0}}},
		sc{Name: "cap cleared", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{"daily_cap": null}`, Status: 200,
			Shape: shape{"paused": true, "daily_cap": nil}},
		sc{Name: "negative cap", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{"daily_cap": -1}`, Status: 400, Code: "invalid_request"},
		sc{Name: "fractional cap", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{"daily_cap": 1.5}`, Status: 400, Code: "invalid_request"},
		sc{Name: "huge cap", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{"daily_cap": 1e12}`, Status: 400, Code: "invalid_request"},
		sc{Name: "string cap", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{"daily_cap": "5"}`, Status: 400, Code: "invalid_request"},
		sc{Name: "another field", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{"ip": "192.0.2.11"}`, Status: 400, Code: "invalid_request"},
		sc{Name: "nothing", Method: "PATCH", Path: "/v1/ips/{ip1}", Body: `{}`, Status: 400, Code: "invalid_request"},
		sc{Name: "patch another workspace's", Method: "PATCH", Path: "/v1/ips/{ip3}", Body: `{"paused": true}`, Status: 404, Code: "not_found"},
		sc{Name: "delete another workspace's", Method: "DELETE", Path: "/v1/ips/{ip3}", Status: 404, Code: "not_found"},
		sc{Name: "hand back", Method: "DELETE", Path: "/v1/ips/{ip2}", Status: 200, Shape: shape{"id": scenario.Var("ip2"), "deleted": true}},
		sc{Name: "gone", Method: "GET", Path: "/v1/ips/{ip2}", Status: 404, Code: "not_found"},
		sc{Name: "free again", Method: "POST", Path: "/v1/ips", Body: map[string]any{"ip": "192.0.2.11"}, Status: 201},
	)
	// The schedule moves one step a UTC day; warm after the last.
	c.Advance(4 * 24 * time.Hour)
	s.Run(t, sc{Name: "day 5", Method: "GET", Path: "/v1/ips/{ip1}", Status: 200, Shape: shape{"warmup": shape{"day": 5.0, "allowance": 750.0}}})
	c.Advance(60 * 24 * time.Hour)
	s.Run(t, sc{Name: "warm", Method: "GET", Path: "/v1/ips/{ip1}", Status: 200, Shape: shape{"warmup": shape{"day": 65.0, "allowance": nil}}})
}
