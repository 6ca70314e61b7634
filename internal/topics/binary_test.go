package topics_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testdb"
)

// TestBinaryPreferencePage runs the real binary: a topic made over the API,
// its preference_url under MAILROOM_PUBLIC_URL served by the same process,
// the page's form switching the topic off, and the API showing it off.
func TestBinaryPreferencePage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary.Build(t)
	addr := binary.FreeAddr(t)
	env := append(os.Environ(),
		"MAILROOM_DATABASE_URL="+testdb.URL(t),
		"MAILROOM_HTTP_ADDR="+addr,
		"MAILROOM_PUBLIC_URL=http://"+addr,
		"MAILROOM_SMTP_ADDR=off",
		"MAILROOM_SECRET_KEY=test-secret-key-0123456789",
		"MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_DATA_DIR="+t.TempDir(),
		"MAILROOM_LOG_LEVEL=warn",
	)
	var logs bytes.Buffer
	binary.Serve(t, bin, env, &logs)
	binary.WaitHealthy(t, addr, 60*time.Second, &logs)
	create := exec.Command(bin, "workspace", "create", "--name", "Acme", "--owner-email", "owner@example.com")
	create.Env = env
	out, err := create.Output()
	if err != nil {
		t.Fatalf("workspace create: %v\n%s", err, logs.String())
	}
	var ws struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatalf("workspace create printed %q", out)
	}
	api := func(method, path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ws.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	api("POST", "/v1/topics", `{"name":"Product news","key":"news"}`)
	p := api("GET", "/v1/topics/preferences?email=ann@example.com", "")
	link := p["preference_url"].(string)
	if !strings.HasPrefix(link, "http://"+addr+"/preferences/") {
		t.Fatalf("preference_url %q", link)
	}
	page, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(body), `value="news" checked`) {
		t.Fatalf("page: %d %s", page.StatusCode, body)
	}
	// The form as a browser submits it with the box unticked.
	resp, err := http.PostForm(link, map[string][]string{"action": {"save"}, "shown": {"news"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := api("GET", "/v1/topics/preferences?email=ann@example.com", "")["preferences"].([]any)[0].(map[string]any)
	if resp.StatusCode != 200 || got["subscribed"] != false || got["source"] != "preference_page" {
		t.Fatalf("after the form: %d %v", resp.StatusCode, got)
	}
}
