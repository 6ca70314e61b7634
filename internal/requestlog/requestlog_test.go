package requestlog_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/requestlog"
	"mailroom/internal/testkit/testapp"
)

type logRow struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	Method         string  `json:"method"`
	Path           string  `json:"path"`
	Endpoint       string  `json:"endpoint"`
	Status         int     `json:"status"`
	ResponseStatus int     `json:"response_status"`
	ErrorCode      *string `json:"error_code"`
	APIKeyID       string  `json:"api_key_id"`
	UserAgent      *string `json:"user_agent"`
	DurationMS     float64 `json:"duration_ms"`
	RequestID      string  `json:"request_id"`
	CreatedAt      string  `json:"created_at"`
	RequestBody    struct {
		Redacted bool  `json:"redacted"`
		Bytes    int64 `json:"bytes"`
	} `json:"request_body"`
}

type logPage struct {
	Object     string   `json:"object"`
	Data       []logRow `json:"data"`
	HasMore    bool     `json:"has_more"`
	NextCursor *string  `json:"next_cursor"`
}

func page(t *testing.T, a *testapp.App, key, query string) logPage {
	t.Helper()
	r := a.DoKey(key, "GET", "/v1/logs"+query, nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/logs%s: %d %s", query, r.Status, r.Body)
	}
	var p logPage
	r.Decode(t, &p)
	return p
}

// waitFor polls the log until query lists at least n rows (the writer
// inserts off the request path).
func waitFor(t *testing.T, a *testapp.App, query string, n int) logPage {
	t.Helper()
	var p logPage
	testapp.Eventually(t, 10*time.Second, func() bool {
		p = page(t, a, a.Key, query)
		return len(p.Data) >= n
	}, "the log did not list %d rows for %s", n, query)
	return p
}

// TestRequestLog: calls made through the real server are listed and read
// back, filtered and paged; nothing secret or any body's content is
// stored; another workspace sees none of them; retention purges old rows.
func TestRequestLog(t *testing.T) {
	a := testapp.Start(t)
	const subject, html, attachment = "Subject-7f3a91", "<p>Body-c41d22</p>", "Attachment-9e8b17"
	send := a.Do("POST", "/v1/emails", map[string]any{
		"from": "onboarding@mailroom.test", "to": []string{"delivered@mailroom.test"}, "subject": subject, "html": html,
		"attachments": []map[string]any{{"filename": "a.txt", "content": base64.StdEncoding.EncodeToString([]byte(attachment))}},
	})
	if send.Status != 200 {
		t.Fatalf("send: %d %s", send.Status, send.Body)
	}
	hook := a.Do("POST", "/v1/webhooks", map[string]any{"endpoint": "http://127.0.0.1:1/hook", "events": []string{"email.delivered"}})
	if hook.Status >= 300 {
		t.Fatalf("webhook: %d %s", hook.Status, hook.Body)
	}
	signing, _ := hook.JSON()["signing_secret"].(string)
	created := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	sendKey, _ := created.JSON()["key"].(string)
	if created.Status != 201 || signing == "" || sendKey == "" {
		t.Fatalf("api key %d %s; signing secret %q", created.Status, created.Body, signing)
	}
	if r := a.Do("GET", "/v1/domains/dom_nothere", nil); r.Status != 404 {
		t.Fatalf("missing domain: %d", r.Status)
	}
	// A secret in the query is redacted; the rest of the query stays.
	a.SkipOpenAPI = true
	a.Do("GET", "/v1/emails?limit=5&token=tok-5b2e&api_key=key-61c0", nil)
	a.SkipOpenAPI = false

	all := waitFor(t, a, "", 6)
	if all.Object != "list" {
		t.Fatalf("object %q", all.Object)
	}
	byPath := map[string]logRow{}
	for _, r := range all.Data {
		byPath[r.Method+" "+r.Path] = r
	}
	var keys struct{ Data []struct{ ID, Name string } }
	a.Do("GET", "/v1/api-keys", nil).Decode(t, &keys)
	ownKey := ""
	for _, k := range keys.Data {
		if k.Name != "sender" {
			ownKey = k.ID
		}
	}
	s, ok := byPath["POST /v1/emails"]
	if !ok || s.Status != 200 || s.ResponseStatus != 200 || s.ErrorCode != nil || s.APIKeyID != ownKey || s.Object != "log" ||
		s.UserAgent == nil || s.RequestID == "" || s.DurationMS <= 0 || !s.RequestBody.Redacted || s.RequestBody.Bytes == 0 || s.Endpoint != s.Path {
		t.Fatalf("the send's row: %+v (key %s)", s, ownKey)
	}
	miss := byPath["GET /v1/domains/dom_nothere"]
	if miss.Status != 404 || miss.ErrorCode == nil || *miss.ErrorCode != "not_found" {
		t.Fatalf("the 404's row: %+v", miss)
	}
	redacted := "GET /v1/emails?limit=5&token=" + requestlog.Redacted + "&api_key=" + requestlog.Redacted
	if _, ok := byPath[redacted]; !ok {
		t.Fatalf("no row %q in %v", redacted, byPath)
	}
	one := a.Do("GET", "/v1/logs/"+s.ID, nil)
	if one.Status != 200 || one.JSON()["id"] != s.ID || one.JSON()["object"] != "log" {
		t.Fatalf("GET /v1/logs/{id}: %d %s", one.Status, one.Body)
	}

	// Nothing stored holds a key, a secret, a body or an attachment.
	dump := dumpTable(t, a)
	for _, secret := range []string{a.Key, sendKey, signing, subject, "Body-c41d22", attachment,
		base64.StdEncoding.EncodeToString([]byte(attachment)), "tok-5b2e", "key-61c0", "delivered@mailroom.test"} {
		if strings.Contains(dump, secret) {
			t.Errorf("the request_logs table holds %q", secret)
		}
	}

	// Filters.
	for _, r := range page(t, a, a.Key, "?status=4xx").Data {
		if r.Status < 400 || r.Status >= 500 {
			t.Fatalf("status=4xx listed %d", r.Status)
		}
	}
	for _, r := range page(t, a, a.Key, "?method=post&path=/v1/emails").Data {
		if r.Method != "POST" || !strings.HasPrefix(r.Path, "/v1/emails") {
			t.Fatalf("method=post&path=/v1/emails listed %s %s", r.Method, r.Path)
		}
	}

	// Paging: 25 calls read back 7 at a time, newest first, each once.
	for range 25 {
		a.Do("GET", "/v1/domains", nil)
	}
	waitFor(t, a, "?path=/v1/domains&status=200&limit=100", 25)
	seen, last, pages := map[string]bool{}, "", 0
	q := "?path=/v1/domains&status=200&limit=7"
	for {
		p := page(t, a, a.Key, q)
		pages++
		for _, r := range p.Data {
			if seen[r.ID] || (last != "" && r.ID >= last) {
				t.Fatalf("page %d: %s out of order or twice", pages, r.ID)
			}
			seen[r.ID], last = true, r.ID
		}
		if !p.HasMore {
			break
		}
		q = "?path=/v1/domains&status=200&limit=7&after=" + url.QueryEscape(*p.NextCursor)
	}
	if len(seen) != 25 || pages != 4 {
		t.Fatalf("paged %d rows in %d pages, want 25 in 4", len(seen), pages)
	}

	// Another workspace sees none of it; a send-only key may not read it.
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	if r := a.DoKey(otherKey, "GET", "/v1/logs/"+s.ID, nil); r.Status != 404 || r.ErrCode() != "not_found" {
		t.Fatalf("another workspace's id: %d %s", r.Status, r.Body)
	}
	for _, r := range page(t, a, otherKey, "").Data {
		if seen[r.ID] || r.ID == s.ID {
			t.Fatalf("another workspace lists %s", r.ID)
		}
	}
	if r := a.DoKey(sendKey, "GET", "/v1/logs", nil); r.Status != 403 || r.ErrCode() != "insufficient_scope" {
		t.Fatalf("send-only key: %d %s", r.Status, r.Body)
	}

	// Bad input answers 400/422 with a message, never a 500.
	now := time.Now().UTC()
	for q, code := range map[string]string{
		"?since=" + now.Add(-40*24*time.Hour).Format(time.RFC3339): "invalid_request", // the window is bounded
		"?since=yesterday": "invalid_request",
		"?status=abc":      "invalid_request",
		"?method=BREW":     "invalid_request",
		"?limit=0":         "invalid_limit",
		"?after=forged":    "invalid_cursor",
		"?token=x":         "invalid_request",
	} {
		r := a.Do("GET", "/v1/logs"+q, nil)
		if r.Status >= 500 || r.ErrCode() != code {
			t.Errorf("GET /v1/logs%s: %d %s, want %s", q, r.Status, r.Body, code)
		}
	}

	// Retention: a row 40 days old goes at the next pass, today's stay.
	w := requestlog.NewWriter(a.DB, prometheus.NewRegistry(), slog.Default())
	w.Start(context.Background())
	w.Record(requestlog.Entry{WorkspaceID: a.WorkspaceID, APIKeyID: ownKey, Method: "GET", Path: "/v1/old", Status: 200,
		RequestID: "req_old", At: now.Add(-40 * 24 * time.Hour)})
	w.Stop(context.Background())
	window := fmt.Sprintf("?since=%s&until=%s", now.Add(-41*24*time.Hour).Format(time.RFC3339), now.Add(-39*24*time.Hour).Format(time.RFC3339))
	old := page(t, a, a.Key, window)
	if len(old.Data) != 1 || old.Data[0].Path != "/v1/old" {
		t.Fatalf("the old row: %+v", old.Data)
	}
	purged, err := a.PurgeNow(context.Background())
	if err != nil || purged["request_logs"] != 1 {
		t.Fatalf("purge: %v %v", purged, err)
	}
	if r := a.Do("GET", "/v1/logs/"+old.Data[0].ID, nil); r.Status != 404 {
		t.Fatalf("the purged row answers %d", r.Status)
	}
	if r := a.Do("GET", "/v1/logs/"+s.ID, nil); r.Status != 200 {
		t.Fatalf("today's row answers %d after the purge", r.Status)
	}
}

// dumpTable is every value of every stored row, as text.
func dumpTable(t *testing.T, a *testapp.App) string {
	t.Helper()
	rows, err := a.DB.Query(context.Background(), `SELECT * FROM request_logs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	n := 0
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(&b, "%v\t", v)
		}
		b.WriteByte('\n')
		n++
	}
	if n < 6 {
		t.Fatalf("the table holds %d rows", n)
	}
	return b.String()
}
