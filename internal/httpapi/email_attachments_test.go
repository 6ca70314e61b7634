package httpapi_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestSentAttachmentsRoutes: a sent email's attachments are listed in the
// Resend SDKs' shape, read by att_<n> and downloaded at download_url with
// their bytes and type; an unknown attachment, another workspace's email
// and another send-only key's email answer 404.
func TestSentAttachmentsRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a).WithOther()
	pdf := []byte("%PDF-1.4 not really\x00\x01")
	s.Run(t,
		sc{Name: "send-only key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "sender", "permission": "sending_access"},
			Status: 201, Save: map[string]string{"sendkey": "token"}},
		sc{Name: "send with two attachments of one name", Method: "POST", Path: "/v1/emails", Body: map[string]any{
			"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "files", "text": "x",
			"attachments": []any{
				map[string]any{"filename": "a.pdf", "content_base64": base64.StdEncoding.EncodeToString(pdf)},
				map[string]any{"filename": "a.pdf", "content_base64": base64.StdEncoding.EncodeToString([]byte("second")), "content_type": "text/plain"},
			}}, Status: 200, Save: map[string]string{"em": "id"}},
		sc{Name: "send without", Method: "POST", Path: "/v1/emails", Body: map[string]any{
			"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "plain", "text": "x"}, Status: 200, Save: map[string]string{"plain": "id"}},
		sc{Name: "list", Method: "GET", Path: "/v1/emails/{em}/attachments", Status: 200,
			Shape: shape{"object": "list", "has_more": false, "data": scenario.Len(2)},
			Check: func(t testing.TB, r *testapp.Response) {
				d := r.JSON()["data"].([]any)
				first, second := d[0].(map[string]any), d[1].(map[string]any)
				if first["id"] != "att_1" || second["id"] != "att_2" || first["size"] != float64(len(pdf)) || first["content_type"] != "application/pdf" ||
					second["content_type"] != "text/plain" || first["content_disposition"] != "attachment" {
					t.Errorf("listing: %s", r.Body)
				}
				if u, _ := second["download_url"].(string); !strings.HasSuffix(u, "/v1/emails/sent/"+s.Get("em")+"/attachments/att_2/content") {
					t.Errorf("download_url %q", u)
				}
			}},
		sc{Name: "none", Method: "GET", Path: "/v1/emails/{plain}/attachments", Status: 200, Shape: shape{"data": scenario.Len(0)}},
		sc{Name: "get the second", Method: "GET", Path: "/v1/emails/{em}/attachments/att_2", Status: 200,
			Shape: shape{"object": "attachment", "id": "att_2", "filename": "a.pdf", "size": 6}},
		sc{Name: "download the first", Method: "GET", Path: "/v1/emails/sent/{em}/attachments/att_1/content", Status: 200,
			Check: func(t testing.TB, r *testapp.Response) {
				if string(r.Body) != string(pdf) || r.Header.Get("Content-Type") != "application/pdf" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("download: %q %v", r.Body, r.Header)
				}
			}},
		sc{Name: "no third", Method: "GET", Path: "/v1/emails/{em}/attachments/att_3", Status: 404, Code: "not_found"},
		sc{Name: "no att_0", Method: "GET", Path: "/v1/emails/{em}/attachments/att_0", Status: 404, Code: "not_found"},
		sc{Name: "not an attachment id", Method: "GET", Path: "/v1/emails/{em}/attachments/a.pdf", Status: 404, Code: "not_found"},
		sc{Name: "unknown email", Method: "GET", Path: "/v1/emails/em_nope/attachments", Status: 404, Code: "not_found"},
		sc{Name: "another workspace: list", Method: "GET", Path: "/v1/emails/{em}/attachments", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "another workspace: download", Method: "GET", Path: "/v1/emails/sent/{em}/attachments/att_1/content", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "a send-only key reads only its own", Method: "GET", Path: "/v1/emails/{em}/attachments/att_1", Key: "{sendkey}", Status: 404, Code: "not_found"},
		sc{Name: "no key", Method: "GET", Path: "/v1/emails/{em}/attachments", Key: scenario.NoKey, Status: 401, Code: "unauthorized"},
		sc{Name: "receiving keeps its route", Method: "GET", Path: "/v1/emails/receiving/nope/attachments", Status: 404, Code: "not_found"},
	)
}

// TestEmailMetricsRoute: GET /v1/emails/metrics answers the Resend SDKs'
// metrics shape from the analytics rollups and refuses by name what the
// rollups do not keep.
func TestEmailMetricsRoute(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "default: totals over 7 days", Method: "GET", Path: "/v1/emails/metrics", Status: 200,
			Shape: shape{"object": "metrics", "granularity": "daily", "dimensions": scenario.Len(0), "data": scenario.Absent, "totals": shape{"sent": 0}}},
		sc{Name: "by period, two metrics", Method: "GET", Path: "/v1/emails/metrics?start_date=2026-01-01&end_date=2026-01-03T10:00:00Z&dimensions=period&metrics=sent,open_rate",
			Status: 200, Shape: shape{"start_date": "2026-01-01", "end_date": "2026-01-03", "metrics": scenario.Len(2), "data": scenario.Len(3),
				"totals": scenario.Keys("sent")}},
		sc{Name: "weekly", Method: "GET", Path: "/v1/emails/metrics?granularity=weekly&dimensions=period", Status: 200, Shape: shape{"granularity": "weekly"}},
		sc{Name: "hourly is not kept", Method: "GET", Path: "/v1/emails/metrics?granularity=hourly", Status: 400, Code: "invalid_request"},
		sc{Name: "a time zone", Method: "GET", Path: "/v1/emails/metrics?timezone=Europe/Paris", Status: 400, Code: "invalid_request"},
		sc{Name: "per email", Method: "GET", Path: "/v1/emails/metrics?email_id=em_x", Status: 400, Code: "invalid_request"},
		sc{Name: "a domain dimension", Method: "GET", Path: "/v1/emails/metrics?dimensions=domain", Status: 400, Code: "invalid_request"},
		sc{Name: "an unknown metric", Method: "GET", Path: "/v1/emails/metrics?metrics=failed", Status: 400, Code: "invalid_request"},
		sc{Name: "not a date", Method: "GET", Path: "/v1/emails/metrics?start_date=yesterday", Status: 400, Code: "invalid_request"},
		sc{Name: "an unknown parameter", Method: "GET", Path: "/v1/emails/metrics?from=2026-01-01", Status: 400, Code: "invalid_request"},
		sc{Name: "a window too long", Method: "GET", Path: "/v1/emails/metrics?start_date=2020-01-01&end_date=2026-01-01", Status: 400, Code: "invalid_request"},
	)
}

// TestEmailReadCarriesBodies: GET /v1/emails/{id} answers the bodies as the
// Resend SDKs' emails.get reads them (null when none) beside the timeline,
// with Get's visibility: another workspace and another send-only key's
// email answer 404.
func TestEmailReadCarriesBodies(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a).WithOther()
	s.Run(t,
		sc{Name: "send-only key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "sender", "permission": "sending_access"},
			Status: 201, Save: map[string]string{"sendkey": "token"}},
		sc{Name: "send html and text", Method: "POST", Path: "/v1/emails", Body: map[string]any{
			"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "both", "html": "<p>Hi</p>", "text": "Hi"},
			Status: 200, Save: map[string]string{"both": "id"}},
		sc{Name: "send text only", Method: "POST", Path: "/v1/emails", Body: map[string]any{
			"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "text", "text": "Plain"},
			Status: 200, Save: map[string]string{"text": "id"}},
		sc{Name: "read both", Method: "GET", Path: "/v1/emails/{both}", Status: 200,
			Shape: shape{"html": "<p>Hi</p>", "text": "Hi", "subject": "both", "events": scenario.Present}},
		sc{Name: "no html is null", Method: "GET", Path: "/v1/emails/{text}", Status: 200,
			Check: func(t testing.TB, r *testapp.Response) {
				if h, ok := r.JSON()["html"]; !ok || h != nil || r.JSON()["text"] != "Plain" {
					t.Errorf("html %v (present %v), text %v", h, ok, r.JSON()["text"])
				}
			}},
		sc{Name: "another workspace", Method: "GET", Path: "/v1/emails/{both}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "another send-only key's", Method: "GET", Path: "/v1/emails/{both}", Key: "{sendkey}", Status: 404, Code: "not_found"},
		sc{Name: "unknown", Method: "GET", Path: "/v1/emails/em_nope", Status: 404, Code: "not_found"},
	)
}
