package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
)

// TestSuppressionAddGlobal runs the operator command and checks the row it
// writes applies to a workspace through the API, and cannot be deleted there.
func TestSuppressionAddGlobal(t *testing.T) {
	url := testdb.URL(t)
	e := map[string]string{"MAILROOM_DATABASE_URL": url, "MAILROOM_DATA_DIR": t.TempDir()}
	ctx := context.Background()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"mailroom", "suppression", "add-global", "--email", "Blocked@Example.COM", "--reason", "complaint"}, env(e), &out, &errOut)
	if err != nil {
		t.Fatal(err, errOut.String())
	}
	var got struct {
		ID, Email, Reason string
		IsGlobal          bool `json:"is_global"`
	}
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("stdout is not exactly one JSON object: %q %v", out.String(), err)
	}
	if got.ID == "" || got.Email != "blocked@example.com" || got.Reason != "complaint" || !got.IsGlobal {
		t.Fatalf("%+v", got)
	}
	// Running it again is harmless and names the same row.
	out.Reset()
	if err := run(ctx, []string{"mailroom", "suppression", "add-global", "--email", "blocked@example.com"}, env(e), &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var again struct{ ID, Reason string }
	json.Unmarshal(out.Bytes(), &again)
	if again.ID != got.ID {
		t.Fatalf("second add-global made another row: %s vs %s", again.ID, got.ID)
	}
	// The row keeps its first reason, and the output says so.
	if again.Reason != "complaint" {
		t.Fatalf("second add-global (reason manual) reports %q; the stored row says complaint", again.Reason)
	}
	// An IDN domain is stored in punycode, the form the send path looks up.
	out.Reset()
	if err := run(ctx, []string{"mailroom", "suppression", "add-global", "--email", "Kim@Bücher.example"}, env(e), &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var idn struct{ Email string }
	json.Unmarshal(out.Bytes(), &idn)
	if idn.Email != "kim@xn--bcher-kva.example" {
		t.Fatalf("IDN stored as %q", idn.Email)
	}
	for _, args := range [][]string{
		{"--email", "a@example.com\r\nX: y"},
		{"--email", "x@example.com", "--reason", "spam"},
		{"--email", "not-an-address"},
		{},
		{"--bogus"},
	} {
		if err := run(ctx, append([]string{"mailroom", "suppression", "add-global"}, args...), env(e), &out, &errOut); err == nil {
			t.Fatalf("add-global %v accepted", args)
		}
	}
	if err := run(ctx, []string{"mailroom", "suppression", "remove"}, env(e), &out, &errOut); err == nil {
		t.Fatal("unknown suppression subcommand accepted")
	}

	a := testapp.Start(t, testapp.WithDatabase(url))
	found, err := suppressions.Suppressed(ctx, a.App.DB, a.WorkspaceID, []string{"BLOCKED@example.com"})
	if err != nil || found["blocked@example.com"] != "complaint" {
		t.Fatalf("send path does not see the global row: %v %v", found, err)
	}
	r := a.Do("GET", "/v1/suppressions?email=blocked@example.com", nil)
	var page struct {
		Suppressions []struct {
			ID       string `json:"id"`
			IsGlobal bool   `json:"is_global"`
		} `json:"suppressions"`
		Total int `json:"total"`
	}
	r.Decode(t, &page)
	if r.Status != 200 || page.Total != 1 || page.Suppressions[0].ID != got.ID || !page.Suppressions[0].IsGlobal {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	if r := a.Do("DELETE", "/v1/suppressions/"+got.ID, nil); r.Status != 404 || r.JSON()["error"] != "not_found" {
		t.Fatalf("delete global: %d %s", r.Status, r.Body)
	}
}
