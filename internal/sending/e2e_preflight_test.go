package sending_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// verdictOf is the first verdict of check (for suppression, of recipient),
// or nil.
func verdictOf(p map[string]any, check, recipient string) map[string]any {
	for _, v := range p["verdicts"].([]any) {
		m := v.(map[string]any)
		if m["check"] == check && (recipient == "" || m["recipient"] == recipient) {
			return m
		}
	}
	return nil
}

// failedContent lists the content checks that failed.
func failedContent(p map[string]any) []string {
	var out []string
	for _, f := range p["content"].([]any) {
		if m := f.(map[string]any); m["ok"] == false {
			out = append(out, m["check"].(string))
		}
	}
	return out
}

// hTag is the h= tag of a DKIM-Signature value, without spaces.
func hTag(sig string) string {
	sig = strings.Join(strings.Fields(sig), "")
	_, h, _ := strings.Cut(sig, ";h=")
	h, _, _ = strings.Cut(h, ";")
	return h
}

// TestPreflight (#48 item 2): a dry run on a verified domain answers 200
// with the message as delivery would sign it (a DKIM-Signature whose h= is
// the delivered message's) and its size, each verdict (a suppressed
// recipient, an opted-out topic, an unknown domain, a used quota, a known
// idempotency key each fail theirs), and the content checks; it writes, counts and sends nothing: GET /v1/emails lists only
// the one real send, the sink receives only it, and a daily quota of 1
// still admits that real send after the dry runs, and then shows in a dry
// run's policy verdict.
func TestPreflight(t *testing.T) {
	sink := smtpsink.Start(t)
	dns := dnstest.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink), testapp.WithEnv("MAILROOM_DAILY_QUOTA", "1"))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	mustStatus(t, a.Do(http.MethodPost, "/v1/suppressions", map[string]any{"email": "gone@rcpt.example"}), 201)
	good := map[string]any{"from": "Acme <news@acme.example>", "to": "ann@rcpt.example", "subject": "Hi", "html": `<p>Hello <a href="https://acme.example/x">there</a></p>`, "text": "Hello",
		"headers": map[string]any{"X-Campaign": "spring"}, "idempotency_key": "pf-1"}

	var p map[string]any
	for range 3 {
		p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "dry_run", true)), 200)
	}
	if p["object"] != "preflight" || p["would_send"] != true || p["id"] != nil {
		t.Fatalf("dry run: %v", p)
	}
	h := p["headers"].(map[string]any)
	sig, _ := h["DKIM-Signature"].(string)
	if !strings.Contains(sig, "d=acme.example") || !strings.Contains(hTag(sig), "From") || h["X-Campaign"] != "spring" || h["Subject"] != "Hi" {
		t.Fatalf("headers: %v", h)
	}
	if size := p["size"].(float64); size < 500 || size > 10000 {
		t.Fatalf("size %v", size)
	}
	for _, c := range []string{"validation", "idempotency", "sender", "domain", "size", "policy", "suppression"} {
		if v := verdictOf(p, c, ""); v == nil || v["ok"] != true {
			t.Errorf("verdict %s: %v", c, v)
		}
	}
	if f := failedContent(p); len(f) != 0 {
		t.Errorf("content findings on a clean message: %v", f)
	}

	// A suppressed recipient fails its own verdict, with the real refusal's code.
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "to", []string{"ann@rcpt.example", "gone@rcpt.example"}, "idempotency_key", nil, "dry_run", true)), 200)
	if v := verdictOf(p, "suppression", "gone@rcpt.example"); p["would_send"] != false || v["ok"] != false || v["code"] != "recipient_suppressed" {
		t.Fatalf("suppressed: %v", p)
	}
	if v := verdictOf(p, "suppression", "ann@rcpt.example"); v["ok"] != true {
		t.Fatalf("unsuppressed recipient: %v", v)
	}

	// Content: an image without alt, a broken link, 110 KB of html, no text.
	big := `<p><img src="https://acme.example/logo.png"><a href="htps//acme.example/broken">x</a></p>` + strings.Repeat("<p>news of the day</p>", 110*1024/20)
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails?dry_run=true", msg2(good, "html", big, "text", nil, "idempotency_key", nil)), 200)
	if f := strings.Join(failedContent(p), ","); f != "links,image_alt,text_part,html_size" || p["would_send"] != true {
		t.Fatalf("content findings %s: %v", f, p["content"])
	}

	// Topics: an opted-out recipient fails the topic verdict; a topic send
	// shows its first recipient's signed List-Unsubscribe, and a body
	// without a visible unsubscribe link is a content finding.
	mustStatus(t, a.Do(http.MethodPost, "/v1/topics", map[string]any{"name": "News", "key": "news"}), 201)
	mustStatus(t, a.Do(http.MethodPost, "/v1/topics", map[string]any{"name": "Tips", "key": "tips", "default_opt_in": false}), 201)
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "topic", "tips", "idempotency_key", nil, "dry_run", true)), 200)
	if v := verdictOf(p, "topic", ""); p["would_send"] != false || v["code"] != "topic_opt_out" {
		t.Fatalf("opted out: %v", p)
	}
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "topic", "news", "to", []string{"ann@rcpt.example", "bob@rcpt.example"}, "idempotency_key", nil, "dry_run", true)), 200)
	h = p["headers"].(map[string]any)
	if lu, _ := h["List-Unsubscribe"].(string); p["would_send"] != true || !strings.Contains(lu, "/unsubscribe/") || !strings.Contains(hTag(h["DKIM-Signature"].(string)), "List-Unsubscribe") ||
		strings.Join(failedContent(p), ",") != "unsubscribe_link" {
		t.Fatalf("topic send: %v", p)
	}

	// A refusal the real call would give is a failing verdict, still 200.
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "from", "news@other.example", "dry_run", true)), 200)
	if v := verdictOf(p, "domain", ""); p["would_send"] != false || v["code"] != "invalid_from_domain" || p["headers"] != nil {
		t.Fatalf("unknown domain: %v", p)
	}
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", map[string]any{"from": "x", "dry_run": true}), 200)
	if v := verdictOf(p, "validation", ""); p["would_send"] != false || v["code"] != "invalid_from" {
		t.Fatalf("invalid: %v", p)
	}

	// Nothing was written, counted or sent: the real send is the first
	// email, keeps its idempotency key, passes the quota of 1, and is all
	// the sink receives.
	r := mustStatus(t, a.Do(http.MethodPost, "/v1/emails", good), 200)
	id := r["id"].(string)
	waitStatus(t, a, id, "delivered", 15*time.Second)
	got := sink.Messages()
	list := mustStatus(t, a.Do(http.MethodGet, "/v1/emails", nil), 200)["data"].([]any)
	if len(got) != 1 || len(list) != 1 || list[0].(map[string]any)["id"] != id {
		t.Fatalf("after the dry runs: %d messages at the sink, %d emails listed", len(got), len(list))
	}
	head, _, _ := strings.Cut(strings.NewReplacer("\r\n ", " ", "\r\n\t", " ").Replace(string(got[0].Data)), "\r\n\r\n")
	signed := ""
	for _, line := range strings.Split(head, "\r\n") {
		if v, ok := strings.CutPrefix(line, "DKIM-Signature:"); ok {
			signed = hTag(v)
		}
	}
	if signed == "" || signed != hTag(sig) {
		t.Errorf("delivered h=%s, preflight h=%s", signed, hTag(sig))
	}

	// Now the quota is used: a dry run says so, and an idempotent replay sends nothing new.
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "idempotency_key", nil, "dry_run", true)), 200)
	if v := verdictOf(p, "policy", ""); p["would_send"] != false || v["code"] != "quota_exhausted" {
		t.Fatalf("after the quota: %v", p)
	}
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/emails", msg2(good, "dry_run", true)), 200)
	if v := verdictOf(p, "idempotency", ""); v["ok"] != false || !strings.Contains(v["message"].(string), id) {
		t.Fatalf("replay: %v", v)
	}
}

// TestPreflightBatch: ?dry_run=true (or dry_run on every entry) answers
// 200 with a report per entry, a refused entry's a failing verdict; a batch
// mixing dry-run and real entries is refused whole, and nothing is stored.
func TestPreflightBatch(t *testing.T) {
	a := testapp.Start(t)
	ok, bad := msg(), msg("to", "stranger@example.org")
	r := mustStatus(t, a.Do(http.MethodPost, "/v1/emails/batch?dry_run=true", map[string]any{"emails": []any{ok, bad}}), 200)
	data := r["data"].([]any)
	first, second := data[0].(map[string]any), data[1].(map[string]any)
	if first["would_send"] != true || first["headers"].(map[string]any)["DKIM-Signature"] == nil || verdictOf(first, "test_addresses", "")["ok"] != true {
		t.Fatalf("first entry: %v", first)
	}
	if v := verdictOf(second, "sandbox", ""); second["would_send"] != false || v["code"] != "sandbox_recipient_not_allowed" {
		t.Fatalf("second entry: %v", second)
	}
	r = mustStatus(t, a.Do(http.MethodPost, "/v1/emails/batch", []any{msg("dry_run", true), msg("dry_run", true)}), 200)
	if len(r["data"].([]any)) != 2 {
		t.Fatalf("entries' own dry_run: %v", r)
	}
	if r := a.Do(http.MethodPost, "/v1/emails/batch", []any{msg("dry_run", true), msg()}); r.Status != 400 || r.ErrCode() != "invalid_request" {
		t.Fatalf("mixed batch: %d %s", r.Status, r.Body)
	}
	if list := mustStatus(t, a.Do(http.MethodGet, "/v1/emails", nil), 200)["data"].([]any); len(list) != 0 {
		t.Fatalf("dry runs stored %d emails", len(list))
	}
}

// msg2 is m with the given fields set (nil removes one).
func msg2(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
