package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/wait"
)

// TestBackupUnderLoadRestores: `mailroom backup` runs beside a node taking
// sends from 8 connections; the backup restored into a new directory
// starts a node that has every email acknowledged before the backup began,
// and reads its sealed secrets with the key restored beside it.
func TestBackupUnderLoadRestores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getenv("MAILROOM_TEST_DATABASE_URL") != "" {
		t.Skip("mailroom backup snapshots SQLite; PostgreSQL is backed up with pg_dump")
	}
	bin := binary.Build(t)
	dir := t.TempDir()
	addr := binary.FreeAddr(t)
	base := append(os.Environ(), "MAILROOM_SMTP_ADDR=127.0.0.1:0", "MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_RATE_LIMIT=1000000", "MAILROOM_LOG_LEVEL=warn", "MAILROOM_SECRET_KEY=")
	environ := append(append([]string{}, base...), "MAILROOM_HTTP_ADDR="+addr,
		"MAILROOM_DATABASE_URL="+filepath.Join(dir, "mailroom.db"), "MAILROOM_DATA_DIR="+dir)
	command := func(env []string, args ...string) []byte {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Fatalf("mailroom %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	var ws map[string]string
	json.Unmarshal(command(environ, "workspace", "create", "--name", "Backed", "--owner-email", "owner@example.com"), &ws)
	key := ws["api_key"]

	logs := &bytes.Buffer{}
	binary.Serve(t, bin, environ, logs)
	binary.WaitHealthy(t, addr, 15*time.Second, logs)
	client := &http.Client{Timeout: 5 * time.Second}
	do := func(a, method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, "http://"+a+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	// A webhook endpoint: its signing secret is sealed with the secret key.
	code, hook := do(addr, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/x","events":["domain.verified"]}`)
	if code != 201 {
		t.Fatalf("webhook: %d %v", code, hook)
	}

	type ack struct {
		id string
		at time.Time
	}
	var mu sync.Mutex
	var acked []ack
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, m := do(addr, "POST", "/v1/emails", fmt.Sprintf(`{"from":"onboarding@mailroom.test","to":["delivered@mailroom.test"],"subject":"b %d-%d","text":"x"}`, w, i))
				if code == 200 {
					mu.Lock()
					acked = append(acked, ack{m["id"].(string), time.Now()})
					mu.Unlock()
				}
			}
		}(w)
	}
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	// The backup runs under load: sends answered before it, and after it.
	wait.For(t, 30*time.Second, func() bool { return answered() >= 100 }, "the load never got going")
	file := filepath.Join(t.TempDir(), "snap.db")
	began := time.Now()
	var out map[string]any
	json.Unmarshal(command(environ, "backup", "--to", file), &out)
	ended := answered()
	wait.For(t, 30*time.Second, func() bool { return answered() >= ended+20 }, "no sends answered after the backup")
	close(stop)
	wg.Wait()
	if out["backup"] != file || out["secret_key"] != file+".key" || out["bytes"].(float64) <= 0 {
		t.Fatalf("backup said %v", out)
	}
	var before []string
	after := 0
	for _, a := range acked {
		if a.at.Before(began) {
			before = append(before, a.id)
		} else {
			after++
		}
	}
	if len(before) < 50 || after == 0 {
		t.Fatalf("the load did not run around the backup: %d before, %d after", len(before), after)
	}
	if _, err := os.Stat(file + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("a partial file was left behind")
	}
	// Backing up over an existing file is refused.
	c := exec.Command(bin, "backup", "--to", file)
	c.Env = environ
	if err := c.Run(); err == nil {
		t.Fatalf("a second backup over %s succeeded", file)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	json.Unmarshal(command(base, "restore", "--from", file, "--to", restored), &out)
	if out["database"] != filepath.Join(restored, "mailroom.db") || out["secret_key"] != filepath.Join(restored, "secret.key") {
		t.Fatalf("restore said %v", out)
	}
	addr2 := binary.FreeAddr(t)
	env2 := append(append([]string{}, base...), "MAILROOM_HTTP_ADDR="+addr2,
		"MAILROOM_DATABASE_URL="+filepath.Join(restored, "mailroom.db"))
	logs2 := &bytes.Buffer{}
	binary.Serve(t, bin, env2, logs2)
	binary.WaitHealthy(t, addr2, 15*time.Second, logs2)
	if out := command(env2, "healthcheck", "--ready"); strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("healthcheck said %q", out)
	}
	for _, id := range before {
		if code, m := do(addr2, "GET", "/v1/emails/"+id, ""); code != 200 {
			t.Fatalf("email %s, acknowledged before the backup, is not in the restored node: %d %v", id, code, m)
		}
	}
	// The node started, so the restored key is the one the database was
	// first started with (app refuses any other, ErrSecretKeyMismatch); and
	// the webhook whose signing secret it sealed is there.
	if code, m := do(addr2, "GET", "/v1/webhooks/"+hook["id"].(string), ""); code != 200 || m["url"] != "https://hooks.example.com/x" {
		t.Fatalf("webhook after restore: %d %v", code, m)
	}
	// Restoring over the restored directory is refused.
	c = exec.Command(bin, "restore", "--from", file, "--to", restored)
	c.Env = base
	if err := c.Run(); err == nil {
		t.Fatalf("restore over an existing database succeeded")
	}
}
