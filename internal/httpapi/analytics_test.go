package httpapi_test

import (
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestAnalyticsRoutes: the analytics routes' answers and every bad input
// the issue names (a 400, never a 500), on a node whose clock is fixed.
func TestAnalyticsRoutes(t *testing.T) {
	a := testapp.Start(t, testapp.WithClock(clock.NewFake(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))))
	s := scenario.New(a)
	bad := func(name, query string) sc {
		return sc{Name: name, Method: "GET", Path: "/v1/analytics?" + query, Status: 400, Code: "invalid_request"}
	}
	s.Run(t,
		sc{Name: "defaults: the last 30 days by day", Method: "GET", Path: "/v1/analytics", Status: 200,
			Shape: shape{"range": shape{"from": "2026-02-08", "to": "2026-03-10", "group_by": "day", "days": 31},
				"series": scenario.Len(31), "breakdown": nil, "notes": scenario.Present,
				"totals": shape{"sends": 0, "opens": 0, "machine_opens": 0, "delivery_rate": nil, "open_rate": nil}}},
		sc{Name: "400 days by month with a tag breakdown", Method: "GET",
			Path:   "/v1/analytics?from=2025-02-04&to=2026-03-10&group_by=month&breakdown=tag&tag_key=campaign",
			Status: 200, Shape: shape{"range": shape{"days": 400}, "series": scenario.Len(14),
				"breakdown": shape{"by": "tag", "tag_key": "campaign", "items": scenario.Len(0)}}},
		sc{Name: "filters", Method: "GET", Path: "/v1/analytics?mail_class=marketing&domain=acme.example&template_id=tpl_1&tag=plan:pro&group_by=week",
			Status: 200, Shape: shape{"range": shape{"group_by": "week"}}},
		bad("date that does not parse", "from=2026-02-30"),
		bad("to before from", "from=2026-03-10&to=2026-03-01"),
		bad("401-day window", "from=2025-02-03&to=2026-03-10"),
		bad("unknown breakdown", "breakdown=country"),
		bad("tag breakdown without tag_key", "breakdown=tag"),
		bad("tag filter without a colon", "tag=campaign"),
		bad("unknown group_by", "group_by=hour"),
		bad("unknown mail_class", "mail_class=bulk"),
		bad("unknown parameter", "form=2026-01-01"),
		bad("repeated parameter", "from=2026-01-01&from=2026-01-02"),
		sc{Name: "tag keys", Method: "GET", Path: "/v1/analytics/tags", Status: 200, Shape: shape{"tag_keys": scenario.Len(0)}},
		sc{Name: "tag keys over 400 days", Method: "GET", Path: "/v1/analytics/tags?days=400", Status: 200},
		sc{Name: "tag keys: days not a number", Method: "GET", Path: "/v1/analytics/tags?days=week", Status: 400, Code: "invalid_request"},
		sc{Name: "tag keys: 401 days", Method: "GET", Path: "/v1/analytics/tags?days=401", Status: 400, Code: "invalid_request"},
		sc{Name: "a send-only key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "sender", "scopes": []string{"mail:send"}},
			Status: 201, Save: map[string]string{"sender": "key"}},
		sc{Name: "needs the workspace scope", Method: "GET", Path: "/v1/analytics", Key: "{sender}", Status: 403, Code: "insufficient_scope"},
	)
}
