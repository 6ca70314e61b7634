package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
)

// TestPolicyCommands runs the operator's policy commands against the
// database a serving node uses: the node honours each within its poll of
// the holds (a pause and `workspace resume`, an address paused or
// receive-only, a blocked recipient domain).
func TestPolicyCommands(t *testing.T) {
	url := testdb.URL(t)
	a := testapp.Start(t, testapp.WithDatabase(url), testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://127.0.0.1:1"))
	e := map[string]string{"MAILROOM_DATABASE_URL": url, "MAILROOM_DATA_DIR": t.TempDir(), "MAILROOM_SECRET_KEY": a.Env["MAILROOM_SECRET_KEY"]}
	cli := func(args ...string) map[string]any {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"mailroom"}, args...), env(e), &out, &errOut); err != nil {
			t.Fatalf("%v: %v %s", args, err, errOut.String())
		}
		var m map[string]any
		dec := json.NewDecoder(&out)
		if err := dec.Decode(&m); err != nil || dec.More() {
			t.Fatalf("%v: stdout is not one JSON object: %q", args, out.String())
		}
		return m
	}
	send := func(body map[string]any) *testapp.Response { return a.Do("POST", "/v1/emails", body) }
	toOwner := map[string]any{"from": "onboarding@mailroom.test", "to": "owner@example.com", "subject": "s", "text": "t"}
	becomes := func(status int, code string, body map[string]any) {
		t.Helper()
		testapp.Eventually(t, 5*time.Second, func() bool {
			r := send(body)
			return r.Status == status && (code == "" || r.ErrCode() == code)
		}, "never answered %d %s", status, code)
	}

	if m := cli("workspace", "pause", "--id", a.WorkspaceID, "--reason", "looking into complaints"); m["paused"] != true || m["changed"] != true {
		t.Fatalf("%v", m)
	}
	becomes(403, "workspace_paused", toOwner)
	if m := cli("workspace", "resume", "--id", a.WorkspaceID); m["resumed"] != true || m["paused"] != false {
		t.Fatalf("%v", m)
	}
	becomes(200, "", toOwner)
	if m := cli("workspace", "resume", "--id", a.WorkspaceID); m["resumed"] != false {
		t.Fatalf("resuming a running workspace: %v", m)
	}

	cli("address", "set", "--workspace", a.WorkspaceID, "--address", "Onboarding@mailroom.test", "--state", "paused")
	becomes(422, "address_paused", toOwner)
	cli("address", "set", "--workspace", a.WorkspaceID, "--address", "onboarding@mailroom.test", "--state", "receive_only")
	becomes(422, "address_receive_only", toOwner)
	cli("address", "set", "--workspace", a.WorkspaceID, "--address", "onboarding@mailroom.test", "--state", "active")
	becomes(200, "", toOwner)

	cli("workspace", "block-domain", "--id", a.WorkspaceID, "--domain", "@Example.com")
	becomes(422, "recipient_blocked_by_policy", toOwner)
	cli("workspace", "unblock-domain", "--id", a.WorkspaceID, "--domain", "example.com")
	becomes(200, "", toOwner)

	// Bad input: clear errors, nothing written.
	for _, args := range [][]string{
		{"workspace", "resume"},
		{"workspace", "resume", "--id", "ws_nope"},
		{"address", "set", "--workspace", a.WorkspaceID, "--address", "x@y.test", "--state", "sleeping"},
		{"address", "set", "--workspace", a.WorkspaceID, "--address", "not-an-address", "--state", "paused"},
		{"workspace", "block-domain", "--id", a.WorkspaceID, "--domain", "no spaces"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"mailroom"}, args...), env(e), &out, &errOut); err == nil {
			t.Errorf("%v: no error (%s)", args, out.String())
		}
	}
}
