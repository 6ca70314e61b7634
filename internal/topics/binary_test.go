package topics_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/testkit/binary"
)

// TestBinaryPreferencePage runs the real binary: a topic made over the API,
// its preference_url under MAILROOM_PUBLIC_URL served by the same process,
// the page's form switching the topic off, and the API showing it off.
func TestBinaryPreferencePage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	addr := binary.FreeAddr(t)
	node := binary.Start(t, "MAILROOM_HTTP_ADDR="+addr, "MAILROOM_PUBLIC_URL=http://"+addr)
	key := node.Workspace("Acme", "owner@example.com")
	api := func(method, path, body string) map[string]any {
		t.Helper()
		var v any
		if body != "" {
			v = json.RawMessage(body)
		}
		return node.Call(key, method, path, v)
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
