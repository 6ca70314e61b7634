package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/wait"
)

// TestAcceptedSendsSurviveKill builds the real binary, loads POST /v1/emails
// (to delivered@) from 16 connections, kills the process with SIGKILL in the
// middle of the load, restarts it on the same SQLite file and checks that
// every email answered 200 exists and is delivered: an answer is given only
// after the commit that holds the email and its job.
func TestAcceptedSendsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	dir := t.TempDir()
	addr := binary.FreeAddr(t)
	environ := append(os.Environ(), "MAILROOM_HTTP_ADDR="+addr, "MAILROOM_SMTP_ADDR=127.0.0.1:0",
		"MAILROOM_DATABASE_URL="+filepath.Join(dir, "mailroom.db"), "MAILROOM_DATA_DIR="+dir,
		"MAILROOM_SERVICE_DOMAIN=mailroom.test", "MAILROOM_RATE_LIMIT=1000000", "MAILROOM_LOG_LEVEL=warn",
		// A job that was running when the process died is retried after this lease.
		"MAILROOM_JOB_RESCUE_AFTER=3s")

	create := exec.Command(bin, "workspace", "create", "--name", "Durable", "--owner-email", "owner@example.com")
	create.Env = environ
	out, err := create.Output()
	if err != nil {
		t.Fatalf("workspace create: %v", err)
	}
	var ws map[string]string
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatal(err)
	}
	key := ws["api_key"]

	serve := func() (*exec.Cmd, *bytes.Buffer) {
		logs := &bytes.Buffer{}
		cmd := binary.Serve(t, bin, environ, logs)
		binary.WaitHealthy(t, addr, 15*time.Second, logs)
		return cmd, logs
	}
	call := func(client *http.Client, method, path string, body []byte) (int, map[string]any, error) {
		req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil, err
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, m, nil
	}

	cmd, logs := serve()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var mu sync.Mutex
	var accepted []string
	var refused atomic.Int64 // calls with no answer: after the kill
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Appendf(nil, `{"from":"onboarding@mailroom.test","to":"delivered+w%d@mailroom.test","subject":"n%d","text":"hi"}`, w, i)
				status, m, err := call(client, http.MethodPost, "/v1/emails", body)
				if err != nil {
					refused.Add(1)
					continue // the kill cut this one off: no answer, no promise
				}
				if status == http.StatusOK {
					mu.Lock()
					accepted = append(accepted, m["id"].(string))
					mu.Unlock()
				}
			}
		}()
	}
	// Killed under load, once a good number of sends were answered.
	wait.For(t, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(accepted) >= 200 }, "the load never got going")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The load keeps knocking on a dead port: every client refused a few times.
	atKill := refused.Load()
	wait.For(t, 30*time.Second, func() bool { return refused.Load() >= atKill+32 }, "the load stopped at the kill")
	close(stop)
	wg.Wait()
	if len(accepted) < 50 {
		t.Fatalf("only %d sends accepted before the kill: %s", len(accepted), logs)
	}

	serve()
	client = &http.Client{Timeout: 5 * time.Second}
	pending := accepted
	// Within the lease (3 s) and a pass of River's rescuer (every 30 s).
	if !wait.Until(60*time.Second, func() bool {
		var still []string
		for _, id := range pending {
			status, m, err := call(client, http.MethodGet, "/v1/emails/"+id, nil)
			if err != nil {
				t.Fatal(err)
			}
			if status != http.StatusOK {
				t.Fatalf("email %s answered 200 before the kill is gone after it: %d %v", id, status, m)
			}
			if m["status"] != "delivered" {
				still = append(still, id)
			}
		}
		pending = still
		return len(pending) == 0
	}) {
		t.Fatalf("%d of %d accepted emails never delivered after the restart (e.g. %s)", len(pending), len(accepted), pending[0])
	}
	t.Logf("%d sends accepted before SIGKILL; all exist and were delivered after the restart", len(accepted))
}
