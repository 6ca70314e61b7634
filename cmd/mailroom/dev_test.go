package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testsignal"
)

var (
	devKey  = regexp.MustCompile(`API key +(mr_\S+)`)
	devLink = regexp.MustCompile(`Dashboard +(http://\S+/sign-in/link/\S+)`)
)

// startDev runs `mailroom dev` in dir and returns it with the key and
// sign-in link it printed.
func startDev(t *testing.T, bin, dir string, environ []string) (*exec.Cmd, string, string) {
	t.Helper()
	cmd := exec.Command(bin, "dev")
	cmd.Dir, cmd.Env = dir, environ
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan [2]string, 1)
	go func() {
		var key, link string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := devKey.FindStringSubmatch(sc.Text()); m != nil {
				key = m[1]
			}
			if m := devLink.FindStringSubmatch(sc.Text()); m != nil {
				link = m[1]
			}
			if key != "" && link != "" {
				found <- [2]string{key, link}
				key, link = "", ""
			}
		}
	}()
	select {
	case f := <-found:
		return cmd, f[0], f[1]
	case <-time.After(60 * time.Second):
		t.Fatalf("mailroom dev printed no key and link; stderr:\n%s", logs.String())
	}
	return nil, "", ""
}

// TestDevBinary (#48 item 4): `mailroom dev` in an empty directory keeps
// SQLite in ./data, prints a key and a sign-in link, verifies a domain
// without DNS, captures an email to an outside address instead of sending
// it (GET /v1/captured-emails; its attempt was handed to the capture
// transport, no server), and posts email.delivered to a webhook on
// 127.0.0.1. Run again, it keeps the workspace and prints a new key.
func TestDevBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	addr := binary.FreeAddr(t)
	dir := t.TempDir()
	dns := dnstest.Start(t) // the domain's records are looked up (and not found) here, not on the Internet
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MAILROOM_") {
			environ = append(environ, kv)
		}
	}
	environ = append(environ, "MAILROOM_HTTP_ADDR="+addr, "MAILROOM_SMTP_ADDR=off", "MAILROOM_DNS_RESOLVER="+dns.Addr(), "MAILROOM_RATE_LIMIT=100000")
	cmd, key, link := startDev(t, bin, dir, environ)
	if _, err := os.Stat(filepath.Join(dir, "data", "mailroom.db")); err != nil {
		t.Fatalf("no SQLite database in ./data: %v", err)
	}
	base := "http://" + addr
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = strings.NewReader(string(b))
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	if !strings.HasPrefix(link, "http://localhost:"+strings.Split(addr, ":")[1]+"/") {
		t.Fatalf("the sign-in link %s is not on the node's port", link)
	}
	res, err := http.Get(strings.Replace(link, "localhost", "127.0.0.1", 1))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("sign-in link: %v %v", err, res)
	}
	res.Body.Close()

	var delivered testsignal.Signal[string] // email.delivered's email ids, as the endpoint gets them
	delivered.Init()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Event string `json:"event"`
			Data  struct {
				EmailID string `json:"email_id"`
			} `json:"data"`
		}
		if json.NewDecoder(r.Body).Decode(&env) == nil && env.Event == "email.delivered" {
			delivered.Send(env.Data.EmailID)
		}
	}))
	defer hook.Close()
	if st, m := call("POST", "/v1/webhooks", map[string]any{"url": hook.URL, "events": []string{"email.delivered"}}); st != 201 {
		t.Fatalf("webhook to 127.0.0.1: %d %v", st, m)
	}
	st, d := call("POST", "/v1/domains", map[string]any{"name": "myapp.example"})
	if st != 201 && st != 200 {
		t.Fatalf("domain: %d %v", st, d)
	}
	if st, v := call("POST", "/v1/domains/"+d["id"].(string)+"/verify", nil); st != 200 {
		t.Fatalf("verify: %d %v", st, v)
	}
	st, sent := call("POST", "/v1/emails", map[string]any{"from": "MyApp <hello@myapp.example>", "to": "customer@gmail.com", "subject": "Welcome", "html": "<p>Welcome!</p>"})
	if st != 200 {
		t.Fatalf("send: %d %v", st, sent)
	}
	id := sent["id"].(string)
	if got := delivered.WaitWithin(t, 30*time.Second); got != id {
		_, e := call("GET", "/v1/emails/"+id, nil)
		t.Fatalf("email.delivered webhook for %q, want %s; email %v", got, id, e)
	}
	_, list := call("GET", "/v1/captured-emails", nil)
	data, _ := list["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["email_id"] != id || data[0].(map[string]any)["to"].([]any)[0] != "customer@gmail.com" {
		t.Fatalf("captured %v", list)
	}
	_, story := call("GET", "/v1/emails/"+id+"/attempts", nil)
	if len(story["data"].([]any)) == 0 {
		t.Fatalf("no attempt: %v", story)
	}
	for _, at := range story["data"].([]any) {
		if b, _ := json.Marshal(at); !strings.Contains(string(b), `"capture"`) {
			t.Fatalf("an attempt went elsewhere than the capture transport: %s", b)
		}
	}
	// Before any domain, the sandbox sender and the test addresses work at
	// dev's service domain (a bare "local" had no dot, so neither did).
	st, sb := call("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.localhost", "to": "dev@mailroom.localhost", "subject": "Hi", "text": "x"})
	if st != 200 {
		t.Fatalf("sandbox send in dev: %d %v", st, sb)
	}
	if got := delivered.WaitWithin(t, 30*time.Second); got != sb["id"] {
		t.Fatalf("email.delivered webhook for %q, want the sandbox send %s", got, sb["id"])
	}
	if st, m := call("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.localhost", "to": "delivered@mailroom.localhost", "subject": "Hi", "text": "x"}); st != 200 {
		t.Fatalf("test address in dev: %d %v", st, m)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dev did not exit 0 on SIGTERM: %v", err)
	}

	// Again in the same directory: the same workspace, a new key.
	_, key2, _ := startDev(t, bin, dir, environ)
	if key2 == key {
		t.Fatal("the same key printed twice")
	}
	key = key2
	if _, list := call("GET", "/v1/captured-emails", nil); len(list["data"].([]any)) != 2 { // the welcome and the sandbox send
		t.Fatalf("the second run's key sees %v", list)
	}
}
