package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/config"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testdb"
)

func env(m map[string]string) func(string) (string, bool) { return config.Map(m) }

func TestWorkspaceCreatePrintsOneJSONObject(t *testing.T) {
	e := map[string]string{"MAILROOM_DATABASE_URL": testdb.URL(t), "MAILROOM_DATA_DIR": t.TempDir()}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"mailroom", "migrate"}, env(e), &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	out.Reset()
	err := run(context.Background(), []string{"mailroom", "workspace", "create", "--name", "Acme", "--owner-email", "me@acme.io"}, env(e), &out, &errOut)
	if err != nil {
		t.Fatal(err, errOut.String())
	}
	var got map[string]string
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("stdout is not exactly one JSON object: %q %v", out.String(), err)
	}
	if !strings.HasPrefix(got["api_key"], "mr_") || !strings.HasPrefix(got["workspace_id"], "ws_") || len(got) != 2 {
		t.Fatalf("%v", got)
	}
	if err := run(context.Background(), []string{"mailroom", "workspace", "create", "--name", "x"}, env(e), &out, &errOut); err == nil {
		t.Fatal("missing --owner-email accepted")
	}
}

// TestServeBinary builds the real binary, serves, creates a workspace while
// it runs, and checks SIGTERM exits 0.
func TestServeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	addr := binary.FreeAddr(t)
	dir := t.TempDir()
	environ := append(os.Environ(), "MAILROOM_HTTP_ADDR="+addr, "MAILROOM_SMTP_ADDR=off", "MAILROOM_DATABASE_URL="+testdb.URL(t), "MAILROOM_DATA_DIR="+dir,
		"MAILROOM_SECRET_KEY=serve-test-secret-0123456789", // required on PostgreSQL
		// Request lines are debug; text lines instead of JSON.
		"MAILROOM_LOG_LEVEL=debug", "MAILROOM_LOG_FORMAT=text")
	var logs bytes.Buffer
	cmd := binary.Serve(t, bin, environ, &logs)
	binary.WaitHealthy(t, addr, 20*time.Second, &logs)
	create := exec.Command(bin, "workspace", "create", "--name", "Live", "--owner-email", "a@b.io")
	create.Env = environ
	out, err := create.Output()
	if err != nil {
		t.Fatalf("workspace create while serving: %v", err)
	}
	var ws map[string]string
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/api-keys", nil)
	req.Header.Set("Authorization", "Bearer "+ws["api_key"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("key from CLI rejected by server: %v %v", err, resp)
	}
	resp.Body.Close()
	// The build is named by the version command, in the log and as a metric.
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || !strings.HasPrefix(string(out), "mailroom devel (commit ") || strings.Count(string(out), "\n") != 1 {
			t.Fatalf("mailroom %s: %v %q", arg, err, out)
		}
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte(`mailroom_build_info{commit="`)) || !bytes.Contains(metrics, []byte(`version="devel"} 1`)) {
		t.Fatalf("no mailroom_build_info in /metrics:\n%.2000s", metrics)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve did not exit 0 on SIGTERM: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), `level=DEBUG msg=request method=GET route="GET /v1/api-keys"`) || !strings.Contains(logs.String(), ` request_id=`) {
		t.Fatalf("request log line missing: %s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg="mailroom devel"`) {
		t.Fatalf("no start-up line naming the build: %s", logs.String())
	}
}
