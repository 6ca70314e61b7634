package sending_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testapp"
)

// TestSendErrors walks the send-side rows of the spec's error catalogue: each
// answers its status and code in the nested shape, and nothing is stored.
func TestSendErrors(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	a.Sending().SetDomains(domainsTable{a.WorkspaceID + "/acme.example": "verified", a.WorkspaceID + "/pending.example": "pending"})
	ctx := context.Background()
	if _, _, err := suppressions.AddGlobal(ctx, a.DB, "gone@acme.example", suppressions.ReasonBounce, time.Now()); err != nil {
		t.Fatal(err)
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = "r" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + "@acme.example"
	}
	for i := range many {
		many[i] = strings.Replace(many[i], "@", "."+string(rune('a'+i/26))+"@", 1)
	}
	// 40,000,000 characters of base64 is allowed by attachments_too_large;
	// 39,000,000 with 3 MB of text assembles (line breaks, headers) over
	// the 40 MiB message limit.
	nearLimit := strings.Repeat("QUFB", 40_000_000/4)
	tests := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"not json", `{"from":`, 400, "invalid_json"},
		{"not an object", `["x"]`, 400, "invalid_request"},
		{"unknown field", msg("fromm", "x"), 400, "invalid_request"},
		{"wrong type", msg("subject", 5), 400, "invalid_request"},
		{"missing from", msg("from", nil), 400, "missing_from"},
		{"invalid from", msg("from", "not an address"), 400, "invalid_from"},
		{"missing to", msg("to", nil), 400, "missing_to"},
		{"invalid recipient", msg("to", []string{"a@@b"}), 400, "invalid_recipient"},
		{"too many recipients", msg("from", "a@acme.example", "to", many), 400, "too_many_recipients"},
		{"mixed test and real", msg("to", []string{delivered, owner}), 400, "mixed_test_and_real_recipients"},
		{"missing subject", msg("subject", nil), 400, "missing_subject"},
		{"missing body", msg("text", nil), 400, "missing_body"},
		{"template", msg("template", map[string]any{"id": "tpl_1"}), 400, "invalid_template"},
		{"reserved header", msg("headers", map[string]string{"Message-ID": "<x@y>"}), 400, "reserved_header"},
		{"invalid header name", msg("headers", map[string]string{"X Bad": "1"}), 400, "invalid_header_name"},
		{"header injection", msg("headers", map[string]string{"X-A": "1\r\nBcc: x@y.z"}), 400, "invalid_request"},
		{"attachment without filename", msg("attachments", []map[string]string{{"content_base64": "eA=="}}), 400, "invalid_attachment"},
		{"attachment data url", msg("attachments", []map[string]string{{"filename": "a", "content_base64": "data:text/plain;base64,eA=="}}), 400, "invalid_attachment"},
		{"send_at invalid", msg("send_at", "whenever"), 400, "send_at_invalid"},
		{"send_at past", msg("send_at", "2001-01-01T00:00:00Z"), 400, "send_at_in_past"},
		{"send_at too far", msg("send_at", "in 31 days"), 400, "send_at_too_far"},
		{"unknown domain", msg("from", "a@other.example", "to", owner), 422, "invalid_from_domain"},
		{"service domain but not the sandbox", msg("from", "news@mailroom.test", "to", owner), 422, "invalid_from_domain"},
		{"pending domain", msg("from", "a@pending.example", "to", owner), 422, "domain_not_verified"},
		{"sandbox to a stranger", msg("to", "someone@else.example"), 422, "sandbox_recipient_not_allowed"},
		{"sandbox cc a stranger", msg("to", owner, "cc", "someone@else.example"), 422, "sandbox_recipient_not_allowed"},
		{"suppressed recipient", msg("from", "a@acme.example", "to", "Gone <GONE@acme.example>"), 422, "recipient_suppressed"},
		{"attachments too large", msg("attachments", []map[string]string{{"filename": "a.bin", "content_base64": nearLimit + "QUFB"}}), 413, "attachments_too_large"},
		{"message too large", msg("text", strings.Repeat("x", 3_000_000), "attachments", []map[string]string{{"filename": "a.bin", "content_base64": nearLimit[:39_000_000]}}), 413, "message_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.Do(http.MethodPost, "/v1/emails", tt.body)
			if r.Status != tt.status || r.ErrCode() != tt.code {
				t.Fatalf("%d %s, want %d %s", r.Status, clip(r.Body), tt.status, tt.code)
			}
			e := r.JSON()["error"].(map[string]any)
			if _, ok := e["next"]; !ok || e["message"] == "" {
				t.Fatalf("not the nested shape: %s", r.Body)
			}
		})
	}
	var n int
	if err := a.DB.QueryRow(ctx, `SELECT count(*) FROM emails`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d emails stored after refused sends (%v)", n, err)
	}

	// What the policy lets through: a verified domain to anyone, the sandbox
	// to the owner, test addresses from a verified domain.
	for _, body := range []any{
		msg("from", "Acme <hello@acme.example>", "to", "someone@else.example"),
		msg("to", "Owner <OWNER@example.com>"),
		msg("from", "hello@acme.example", "to", []string{delivered, "bounced+x@mailroom.test"}),
	} {
		send(t, a, body)
	}
}

// TestSendingLockedAndScopes: an unconfirmed owner locks sending; a key
// without mail:send is refused; no key is 401.
func TestSendingLockedAndScopes(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	_, key, err := a.Workspaces.CreateWorkspace(context.Background(), "Locked", "new@example.com", false)
	if err != nil {
		t.Fatal(err)
	}
	r := a.DoKey(key, http.MethodPost, "/v1/emails", msg())
	if r.Status != http.StatusForbidden || r.ErrCode() != "sending_locked" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	rk := mustStatus(t, a.Do(http.MethodPost, "/v1/api-keys", map[string]any{"name": "reader", "scopes": []string{"mail:read"}}), http.StatusCreated)
	for _, path := range []string{"/v1/emails", "/v1/emails/batch"} {
		r = a.DoKey(rk["key"].(string), http.MethodPost, path, msg())
		if r.Status != http.StatusForbidden || r.ErrCode() != "insufficient_scope" {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
	}
	if r := a.DoKey("", http.MethodPost, "/v1/emails", msg()); r.Status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.Status)
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
