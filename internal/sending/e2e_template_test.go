package sending_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/testkit/testapp"
)

// TestSendWithTemplate: a send naming a template stores the published
// version rendered with its variables, and which template and version.
func TestSendWithTemplate(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	ctx := context.Background()
	mk := func(body map[string]any) map[string]any {
		t.Helper()
		return mustStatus(t, a.Do(http.MethodPost, "/v1/templates", body), http.StatusCreated)
	}
	welcome := mk(map[string]any{"name": "Welcome", "subject": "Hi {{name}}", "publish": true,
		"html":      "<body><p>Hello {{name}}, {{#items}}[{{.}}]{{/items}}</p></body>",
		"variables": []any{"name", map[string]any{"name": "items", "required": false}}})
	tplID := welcome["id"].(string)
	// Version 2 is published: the send must render it, not version 1.
	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tplID+"/versions", map[string]any{
		"subject": "Welcome {{name}}", "html": "<body><p>Hello {{name}}, {{#items}}[{{.}}]{{/items}}</p></body>", "variables": []any{"name"}}), http.StatusCreated)
	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tplID+"/publish", map[string]any{"version": 2}), http.StatusOK)
	draft := mk(map[string]any{"name": "Draft", "text": "x"})

	stored := func(id string) (*sending.Stored, string, int) {
		t.Helper()
		s, err := sending.Load(ctx, a.DB, a.WorkspaceID, id, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var tid string
		var ver int
		if err := a.DB.QueryRow(ctx, `SELECT template_id, template_version FROM emails WHERE id = ?`, id).Scan(&tid, &ver); err != nil {
			t.Fatal(err)
		}
		return s, tid, ver
	}

	// No subject, html or text on the send: all come from the template.
	id := send(t, a, msg("subject", nil, "text", nil, "template", map[string]any{"id": tplID,
		"variables": map[string]any{"name": "<Ann>\r\nBcc: x@example.com", "items": []any{1, "two"}}}))
	s, tid, ver := stored(id)
	if tid != tplID || ver != 2 {
		t.Errorf("stored template %q version %d, want %s version 2", tid, ver, tplID)
	}
	if want := "Welcome <Ann>  Bcc: x@example.com"; s.Message.Subject != want {
		t.Errorf("subject %q, want %q (one line)", s.Message.Subject, want)
	}
	if want := "<body><p>Hello &lt;Ann&gt;\r\nBcc: x@example.com, [1][two]</p></body>"; s.Message.HTML != want {
		t.Errorf("html %q, want %q", s.Message.HTML, want)
	}
	// The template has no text: the delivery engine derives it when it
	// builds the message, as for any html-only send.
	if s.Message.Text != "" {
		t.Errorf("stored text %q, want none", s.Message.Text)
	}
	if b, err := outbound.Build(s.Message); err != nil || !strings.Contains(string(b), "text/plain") || !strings.Contains(string(b), "[1][two]") {
		t.Errorf("built message lacks the derived text part (%v):\n%s", err, b)
	}
	if getEmail(t, a, id)["subject"] != "Welcome <Ann>  Bcc: x@example.com" {
		t.Errorf("the email read shows another subject")
	}

	// By slug, with the send's own subject and text overriding the template's.
	id = send(t, a, msg("subject", "Mine", "text", "My text", "template", map[string]any{"id": "welcome", "variables": map[string]any{"name": "Bo"}}))
	s, tid, _ = stored(id)
	if tid != tplID || s.Message.Subject != "Mine" || s.Message.Text != "My text" || s.Message.HTML != "<body><p>Hello Bo, </p></body>" {
		t.Errorf("override: template %q subject %q text %q html %q", tid, s.Message.Subject, s.Message.Text, s.Message.HTML)
	}
	// The send's own html replaces the template's html and text.
	id = send(t, a, msg("text", nil, "html", "<b>own</b>", "template", map[string]any{"id": tplID, "variables": map[string]any{"name": "Bo"}}))
	if s, _, _ = stored(id); s.Message.HTML != "<b>own</b>" || s.Message.Subject != "Hello" {
		t.Errorf("own html: subject %q html %q", s.Message.Subject, s.Message.HTML)
	}

	// A plain send stores no template.
	id = send(t, a, msg())
	if _, tid, ver = stored(id); tid != "" || ver != 0 {
		t.Errorf("plain send stored template %q version %d", tid, ver)
	}

	// Errors, nested on /v1/emails.
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"missing template", msg("text", nil, "template", map[string]any{"id": "tpl_nope"}), 400, "invalid_template"},
		{"malformed template", msg("text", nil, "template", map[string]any{"id": tplID, "variables": "x"}), 400, "invalid_template"},
		{"unpublished", msg("text", nil, "template", map[string]any{"id": draft["id"]}), 422, "template_not_published"},
		{"missing variable", msg("text", nil, "template", map[string]any{"id": tplID}), 422, "template_variables_missing"},
		{"no template, no body", msg("text", nil), 400, "missing_body"},
		{"no template, no subject", msg("subject", nil), 400, "missing_subject"},
	} {
		r := a.Do(http.MethodPost, "/v1/emails", tc.body)
		e, _ := r.JSON()["error"].(map[string]any)
		if r.Status != tc.status || e == nil || e["code"] != tc.code {
			t.Errorf("%s: %d %s, want %d %s (nested)", tc.name, r.Status, r.Body, tc.status, tc.code)
		}
	}

	// Batch entries render on their own; a bad one fails alone.
	r := a.Do(http.MethodPost, "/v1/emails/batch", map[string]any{"emails": []any{
		msg("subject", nil, "text", nil, "template", map[string]any{"id": tplID, "variables": map[string]any{"name": "Cy"}}),
		msg("text", nil, "template", map[string]any{"id": draft["id"]}),
	}})
	data := mustStatus(t, r, http.StatusMultiStatus)["data"].([]any)
	first, second := data[0].(map[string]any), data[1].(map[string]any)
	if first["status"] != "queued" || second["status"] != "failed" || second["error"].(map[string]any)["code"] != "template_not_published" {
		t.Fatalf("batch: %s", r.Body)
	}
	if s, _, _ = stored(first["id"].(string)); s.Message.Subject != "Welcome Cy" {
		t.Errorf("batch entry subject %q", s.Message.Subject)
	}

	// An idempotent repeat answers the first email, even after the template
	// changed: the key covers the template id and variables as sent.
	body := msg("subject", nil, "text", nil, "idempotency_key", "k1", "template", map[string]any{"id": tplID, "variables": map[string]any{"name": "Di"}})
	first1 := send(t, a, body)
	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tplID+"/publish", map[string]any{"version": 1}), http.StatusOK)
	if again := send(t, a, body); again != first1 {
		t.Errorf("repeat answered %s, want %s", again, first1)
	}
}
