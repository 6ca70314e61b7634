package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/testkit/testapp"
)

func errCode(t *testing.T, r *testapp.Response) string {
	t.Helper()
	m := r.JSON()
	switch e := m["error"].(type) {
	case string:
		return e
	case map[string]any:
		c, _ := e["code"].(string)
		return c
	}
	t.Fatalf("no error in %d body %s", r.Status, r.Body)
	return ""
}

func TestAPIKeysLifecycle(t *testing.T) {
	a := testapp.Start(t)
	r := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created struct {
		ID, Name, Key string
		Scopes        []string
	}
	r.Decode(t, &created)
	if !strings.HasPrefix(created.Key, "mr_") || len(created.Key) < 40 || created.Name != "sender" || len(created.Scopes) != 1 {
		t.Fatalf("unexpected key %+v", created)
	}
	list := a.Do("GET", "/v1/api-keys", nil)
	if list.Status != 200 || strings.Contains(string(list.Body), created.Key) || strings.Contains(string(list.Body), `"key"`) {
		t.Fatalf("list shows key values or failed: %d %s", list.Status, list.Body)
	}
	if n := len(list.JSON()["api_keys"].([]any)); n != 2 {
		t.Fatalf("want 2 keys, got %d", n)
	}
	// The new key works for its scope and not beyond it.
	if r := a.DoKey(created.Key, "GET", "/v1/api-keys", nil); r.Status != 403 || errCode(t, r) != "insufficient_scope" {
		t.Fatalf("send-only key on api-keys: %d %s", r.Status, r.Body)
	}
	// Full-access key created without scopes.
	r = a.Do("POST", "/v1/api-keys", map[string]any{"name": "all"})
	if r.Status != 201 || len(r.JSON()["scopes"].([]any)) != 3 {
		t.Fatalf("no-scope key: %d %s", r.Status, r.Body)
	}
	// Revocation is effective on the very next request.
	if r := a.Do("DELETE", "/v1/api-keys/"+created.ID, nil); r.Status != 200 || r.JSON()["deleted"] != created.ID {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := a.DoKey(created.Key, "GET", "/v1/api-keys", nil); r.Status != 401 || errCode(t, r) != "unauthorized" {
		t.Fatalf("revoked key: %d %s", r.Status, r.Body)
	}
	if r := a.Do("DELETE", "/v1/api-keys/"+created.ID, nil); r.Status != 404 || errCode(t, r) != "not_found" {
		t.Fatalf("second delete: %d %s", r.Status, r.Body)
	}
	// Another workspace's key id answers 404, never 403.
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	if r := a.DoKey(otherKey, "DELETE", "/v1/api-keys/"+list.JSON()["api_keys"].([]any)[0].(map[string]any)["id"].(string), nil); r.Status != 404 {
		t.Fatalf("foreign key id: %d %s", r.Status, r.Body)
	}
	// Bad scopes and names.
	for _, body := range []any{map[string]any{"name": "x", "scopes": []string{"admin"}}, map[string]any{"scopes": []string{}}, map[string]any{"name": 5},
		map[string]any{"name": "none", "scopes": []string{}}} {
		if r := a.Do("POST", "/v1/api-keys", body); r.Status != 400 || errCode(t, r) != "invalid_request" {
			t.Fatalf("bad create %v: %d %s", body, r.Status, r.Body)
		}
	}
	// Omitting scopes (or null) still gives full access, and the refused
	// empty list created no key.
	for _, body := range []any{map[string]any{"name": "full"}, map[string]any{"name": "full", "scopes": nil}} {
		r := a.Do("POST", "/v1/api-keys", body)
		if r.Status != 201 || len(r.JSON()["scopes"].([]any)) != 3 {
			t.Fatalf("create %v: %d %s", body, r.Status, r.Body)
		}
	}
	for _, k := range a.Do("GET", "/v1/api-keys", nil).JSON()["api_keys"].([]any) {
		if k.(map[string]any)["name"] == "none" {
			t.Fatalf("a key with empty scopes was created: %v", k)
		}
	}
}

func TestAuthentication(t *testing.T) {
	a := testapp.Start(t)
	cases := map[string]string{
		"absent":    "",
		"basic":     "Basic dXNlcjpwYXNz",
		"wrong":     "Bearer mr_" + strings.Repeat("a", 52),
		"malformed": "Bearer hello",
		"no prefix": "Bearer " + a.Key[3:],
	}
	for name, authz := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", a.URL+"/v1/api-keys", nil)
			if authz != "" {
				req.Header.Set("Authorization", authz)
			}
			r := a.Send(req)
			if r.Status != 401 || errCode(t, r) != "unauthorized" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if _, nested := r.JSON()["error"].(map[string]any); !nested {
				t.Fatalf("api-keys errors are nested: %s", r.Body)
			}
			if r.Header.Get("x-request-id") == "" || r.Header.Get("RateLimit-Limit") == "" {
				t.Fatalf("missing headers: %v", r.Header)
			}
		})
	}
}

func TestBadBodies(t *testing.T) {
	a := testapp.Start(t)
	big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
	cases := []struct {
		name, ctype, body string
		status            int
		code              string
	}{
		{"not json", "application/json", `{"name":`, 400, "invalid_json"},
		{"empty", "application/json", ``, 400, "invalid_json"},
		{"array", "application/json", `[1,2]`, 400, "invalid_request"},
		{"wrong type", "application/json", `{"name":["a"]}`, 400, "invalid_request"},
		{"unknown field", "application/json", `{"name":"a","colour":"red"}`, 400, "invalid_request"},
		{"form", "application/x-www-form-urlencoded", `name=a`, 400, "invalid_request"},
		{"bad utf8", "application/json", "{\"name\":\"\xff\xfe\"}", 400, "invalid_json"},
		{"two values", "application/json", `{"name":"a"}{"name":"b"}`, 400, "invalid_json"},
		{"too large", "application/json", big, 413, "request_too_large"},
		// Without a Content-Length (chunked), the body is read another way.
		{"too large, chunked", "application/json", big, 413, "request_too_large"},
		{"not json, chunked", "application/json", `{"name":`, 400, "invalid_json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(c.body)
			if strings.HasSuffix(c.name, "chunked") {
				body = io.MultiReader(body) // hides the length
			}
			req, _ := http.NewRequest("POST", a.URL+"/v1/api-keys", body)
			req.Header.Set("Content-Type", c.ctype)
			req.Header.Set("Authorization", "Bearer "+a.Key)
			r := a.Send(req)
			if r.Status != c.status || errCode(t, r) != c.code {
				t.Fatalf("want %d %s, got %d %s", c.status, c.code, r.Status, r.Body)
			}
		})
	}
	// Nothing was written by any of them.
	if n := len(a.Do("GET", "/v1/api-keys", nil).JSON()["api_keys"].([]any)); n != 1 {
		t.Fatalf("bad bodies wrote keys: %d", n)
	}
}

func TestUnknownRouteShapes(t *testing.T) {
	a := testapp.Start(t)
	r := a.Do("GET", "/v1/nothing-here", nil)
	if r.Status != 404 || errCode(t, r) != "not_found" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if _, nested := r.JSON()["error"].(map[string]any); !nested {
		t.Fatalf("want nested: %s", r.Body)
	}
	r = a.Do("GET", "/v1/topics/zzz/unknown", nil)
	if r.Status != 404 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if _, flat := r.JSON()["error"].(string); !flat {
		t.Fatalf("topics family is flat: %s", r.Body)
	}
}

func TestRateLimitPerKey(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_RATE_LIMIT", "5"), testapp.WithEnv("MAILROOM_RATE_LIMIT_ANONYMOUS", "3"))
	check429 := func(r *testapp.Response, limit int) {
		t.Helper()
		if r.Status != 429 || r.JSON()["error"] != "rate_limited" {
			t.Fatalf("want flat 429 rate_limited, got %d %s", r.Status, r.Body)
		}
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if r.Header.Get("RateLimit-Remaining") != "0" || r.Header.Get("RateLimit-Limit") != strconv.Itoa(limit) {
			t.Fatalf("headers %v", r.Header)
		}
	}
	for i := 0; i < 5; i++ {
		r := a.Do("GET", "/v1/api-keys", nil)
		if r.Status != 200 {
			t.Fatalf("request %d: %d", i, r.Status)
		}
		if got := r.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(4-i) {
			t.Fatalf("remaining after %d: %s", i+1, got)
		}
		if r.Header.Get("RateLimit-Policy") != "5;w=60" {
			t.Fatalf("policy %q", r.Header.Get("RateLimit-Policy"))
		}
		reset, _ := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
		abs, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
		now := time.Now().Unix()
		if reset < 0 || reset > 60 || abs < now || abs > now+61 {
			t.Fatalf("reset %d abs %d now %d", reset, abs, now)
		}
		if r.Header.Get("Retry-After") != "" {
			t.Fatal("Retry-After on a 200")
		}
	}
	check429(a.Do("GET", "/v1/api-keys", nil), 5)
	// Anonymous callers have their own, smaller per-IP budget.
	for i := 0; i < 3; i++ {
		if r := a.DoKey("", "GET", "/v1/api-keys", nil); r.Status != 401 {
			t.Fatalf("anonymous %d: %d", i, r.Status)
		}
	}
	check429(a.DoKey("", "GET", "/v1/api-keys", nil), 3)
}

func TestRateLimitSharedThroughRedis(t *testing.T) {
	url := os.Getenv("MAILROOM_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	prefixEnv := testapp.WithEnv("MAILROOM_REDIS_URL", url)
	a := testapp.Start(t, prefixEnv, testapp.WithEnv("MAILROOM_RATE_LIMIT", "6"))
	if r := a.Do("GET", "/v1/api-keys", nil); r.Status != 200 {
		t.Skipf("Redis at %s not usable (%d %s)", url, r.Status, r.Body)
	}
	b := testapp.Start(t, prefixEnv, testapp.WithEnv("MAILROOM_RATE_LIMIT", "6"), testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]))
	// Same key, two nodes, one budget: 6 in total.
	for i := 0; i < 5; i++ {
		node := a
		if i%2 == 0 {
			node = b
		}
		r := node.DoKey(a.Key, "GET", "/v1/api-keys", nil)
		if r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := b.DoKey(a.Key, "GET", "/v1/api-keys", nil); r.Status != 429 {
		t.Fatalf("7th request across nodes: %d (remaining %s)", r.Status, r.Header.Get("RateLimit-Remaining"))
	}
}

func TestHealthReadyMetricsOpenAPI(t *testing.T) {
	a := testapp.Start(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(a.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	a.Do("GET", "/v1/api-keys", nil)
	resp, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	buf := new(strings.Builder)
	fmt.Fprint(buf, "")
	b := make([]byte, 1<<20)
	n, _ := readAll(resp, b)
	body := string(b[:n])
	for _, want := range []string{`mailroom_http_requests_total{route="GET /v1/api-keys",status="200"}`, "mailroom_http_request_duration_seconds", "mailroom_queue_depth"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	r := a.DoKey("", "GET", "/v1/openapi.json", nil)
	if r.Status != 200 || r.JSON()["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %d %.200s", r.Status, r.Body)
	}
}

func readAll(resp *http.Response, b []byte) (int, error) {
	defer resp.Body.Close()
	n := 0
	for n < len(b) {
		m, err := resp.Body.Read(b[n:])
		n += m
		if err != nil {
			return n, nil
		}
	}
	return n, nil
}

func TestLastUsedCoalesced(t *testing.T) {
	a := testapp.Start(t)
	a.Do("GET", "/v1/api-keys", nil)
	var stored *int64
	row := a.DB.QueryRow(t.Context(), `SELECT last_used_at FROM api_keys WHERE workspace_id = ?`, a.WorkspaceID)
	if err := row.Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != nil {
		t.Fatalf("authentication wrote last_used_at per request")
	}
	if r := a.Do("GET", "/v1/api-keys", nil); r.JSON()["api_keys"].([]any)[0].(map[string]any)["last_used_at"] == nil {
		t.Fatalf("list does not show the pending last use: %s", r.Body)
	}
	if err := a.Workspaces.FlushLastUsed(t.Context()); err != nil {
		t.Fatal(err)
	}
	row = a.DB.QueryRow(t.Context(), `SELECT last_used_at FROM api_keys WHERE workspace_id = ?`, a.WorkspaceID)
	if err := row.Scan(&stored); err != nil || stored == nil {
		t.Fatalf("flush did not write: %v", err)
	}
}

func TestRequestIDsAreUnique(t *testing.T) {
	a := testapp.Start(t)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		id := a.Do("GET", "/v1/api-keys", nil).Header.Get("x-request-id")
		if !ids.HasPrefix(id, "req") || seen[id] {
			t.Fatalf("request id %q", id)
		}
		seen[id] = true
	}
}
