package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testdb"
)

// TestDashboardLinkCommand: `mailroom dashboard link` prints one JSON object
// with a link under MAILROOM_PUBLIC_URL valid for 15 minutes; an unknown
// workspace is an error, a missing flag a usage error (exit 2).
func TestDashboardLinkCommand(t *testing.T) {
	e := map[string]string{"MAILROOM_DATABASE_URL": testdb.URL(t), "MAILROOM_DATA_DIR": t.TempDir(), "MAILROOM_PUBLIC_URL": "https://mail.example.com"}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"mailroom", "workspace", "create", "--name", "Acme", "--owner-email", "me@acme.io"}, env(e), &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var ws map[string]string
	_ = json.Unmarshal(out.Bytes(), &ws)
	out.Reset()
	if err := run(context.Background(), []string{"mailroom", "dashboard", "link", "--workspace", ws["workspace_id"]}, env(e), &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var got map[string]string
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("stdout is not exactly one JSON object: %q %v", out.String(), err)
	}
	exp, err := time.Parse(time.RFC3339, got["expires_at"])
	if !strings.HasPrefix(got["url"], "https://mail.example.com/sign-in/link/") || got["url"] != "https://mail.example.com"+got["path"] ||
		err != nil || time.Until(exp) < 14*time.Minute || time.Until(exp) > 16*time.Minute {
		t.Fatalf("%v", got)
	}
	if err := run(context.Background(), []string{"mailroom", "dashboard", "link", "--workspace", "ws_nope"}, env(e), &out, &errOut); err == nil {
		t.Fatal("a link for an unknown workspace")
	}
	if err := run(context.Background(), []string{"mailroom", "dashboard", "link"}, env(e), &out, &errOut); exitCode(err) != 2 {
		t.Fatalf("missing --workspace: %v (exit %d)", err, exitCode(err))
	}
	if err := run(context.Background(), []string{"mailroom", "dashboard", "nope"}, env(e), &out, &errOut); exitCode(err) != 2 {
		t.Fatalf("unknown dashboard command: %v", err)
	}
}
