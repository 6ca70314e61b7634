package resendcompat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// nodeResult is one line of calls.mjs: a call of the SDK and how it went.
type nodeResult struct {
	Call    string          `json:"call"`
	OK      bool            `json:"ok"`
	Missing bool            `json:"missing"`
	Error   json.RawMessage `json:"error"`
}

// nodeDir is the Node project holding the SDK, installed from its lock
// file: by .ci/run (npm ci), or here when node_modules is missing.
func nodeDir(t *testing.T) (node, dir string) {
	t.Helper()
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node or npm is not installed; .ci/run installs them")
		}
		t.Skip("node or npm is not installed")
	}
	dir, err := filepath.Abs("testdata/node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "resend")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("npm ci: %v\n%s", err, out)
			}
			t.Skipf("npm ci failed (no registry?): %v\n%s", err, out)
		}
	}
	return node, dir
}

// TestNodeSDK calls every method of the Resend Node SDK (calls.mjs, the
// version pinned in package-lock.json) against a real node, one subtest
// per call: a call in nodeUnsupported must fail (with its reason recorded
// there and in docs/resend.md), every other call must succeed with the
// answer shape the SDK declares. A method the SDK has and calls.mjs does
// not call fails too.
func TestNodeSDK(t *testing.T) {
	node, dir := nodeDir(t)
	a := startWithMail(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "calls.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RESEND_BASE_URL="+a.URL+"/v1", "MAILROOM_KEY="+a.Key)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node calls.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r nodeResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		seen[r.Call] = true
		t.Run(r.Call, func(t *testing.T) {
			reason, unsupported := nodeUnsupported[r.Call]
			switch {
			case r.Missing:
				t.Errorf("the SDK has %s and calls.mjs does not call it: add it there, here and to docs/resend.md", r.Call)
			case unsupported && r.OK:
				t.Errorf("succeeds now, but is listed as unsupported (%s): move it out of nodeUnsupported and docs/resend.md's not-yet rows", reason)
			case !unsupported && !r.OK:
				t.Errorf("failed: %s", r.Error)
			case unsupported:
				t.Logf("unsupported (%s): %s", reason, r.Error)
			}
		})
	}
	for call := range nodeUnsupported {
		if !seen[call] {
			t.Errorf("nodeUnsupported lists %s, which calls.mjs did not report", call)
		}
	}
	if len(seen) < 100 {
		t.Errorf("calls.mjs reported %d calls; expected every method of the SDK", len(seen))
	}
}

// startWithMail starts a node with inbound SMTP and has it receive one
// message with an attachment (for the receiving calls).
func startWithMail(t *testing.T) *testapp.App {
	t.Helper()
	// The public URL is the node's own address: a received email's
	// raw.download_url is fetched from it (emails.receiving.forward).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"), testapp.WithEnv("MAILROOM_HTTP_ADDR", addr),
		testapp.WithEnv("MAILROOM_PUBLIC_URL", "http://"+addr))
	var list struct{ Mailboxes []struct{ Address string } }
	a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
	if len(list.Mailboxes) == 0 {
		t.Fatal("no mailbox to receive in")
	}
	to := list.Mailboxes[0].Address
	raw := "From: Ann <ann@sender.example>\r\nTo: <" + to + ">\r\nSubject: Received\r\nMessage-ID: <r1@sender.example>\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n" +
		"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"note.txt\"\r\n\r\nnote\r\n--b--\r\n"
	if err := smtp.SendMail(a.SMTPAddr(), nil, "ann@sender.example", []string{to}, []byte(raw)); err != nil {
		t.Fatalf("receive: %v", err)
	}
	testapp.Eventually(t, 10*time.Second, func() bool {
		return len(a.Do("GET", "/v1/messages", nil).JSON()["messages"].([]any)) > 0
	}, "the message was not stored")
	// One subscriber (Mailroom's audiences have no SDK call), so that a
	// broadcast to a segment alone has someone to go to.
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "Subscribers"}).JSON()["id"]
	if r := a.Do("POST", fmt.Sprintf("/v1/audiences/%v/contacts", aud), []map[string]string{{"email": "delivered@mailroom.test"}}); r.Status != 201 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	return a
}

// nodeUnsupported are the SDK calls that do not work against Mailroom,
// each with why: "not yet" (issue #41 still open on it) or the reason
// Mailroom does not offer the feature. docs/resend.md has the same rows.
var nodeUnsupported = unsupported(
	notOffered("no public share pages of a sent email", "emails.share"),
	notOffered("tracking is chosen per email (the spec refuses a per-domain switch)", "domains.update"),
	notOffered("no accounts to claim a domain from on a self-hosted node", "domains.claims.create", "domains.claims.get", "domains.claims.verify"),
	notOffered("API keys are not renamed; create a new one", "apiKeys.update"),
	notOffered("Mailroom's segments are rules over contacts, not lists a contact is added to", "contacts.create{segments}", "contacts.segments.add",
		"contacts.segments.remove"),
	notOffered("the spec keeps content out of PATCH /v1/templates/{id} (a new version is POST /v1/templates/{id}/versions)", "templates.update"),
	notOffered("no labels, drafts or AI agent on mailboxes", "inboxes.threads.labels.add", "inboxes.threads.labels.set",
		"inboxes.threads.labels.remove", "inboxes.labels.list", "inboxes.labels.create", "inboxes.labels.update", "inboxes.labels.remove",
		"inboxes.drafts.list", "inboxes.drafts.create", "inboxes.drafts.get", "inboxes.drafts.update", "inboxes.drafts.remove",
		"inboxes.drafts.send", "inboxes.agent.get", "inboxes.agent.update"),
	notOffered("no OAuth applications: access is by API key", "oauthGrants.list", "oauthGrants.revoke"),
	notOffered("no billing plans or quotas to report", "usage.get"),
)

type reasonRow struct {
	reason string
	calls  []string
}

func notYet(what string, calls ...string) reasonRow { return reasonRow{"not yet: " + what, calls} }
func notOffered(why string, calls ...string) reasonRow {
	return reasonRow{"not offered: " + why, calls}
}

func unsupported(rows ...reasonRow) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		for _, c := range r.calls {
			m[c] = r.reason
		}
	}
	return m
}
