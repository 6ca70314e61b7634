package automations_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
	"mailroom/internal/webhooks"
)

type hookSink struct {
	mu     sync.Mutex
	bodies []string
	sigs   []string
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.sigs = append(h.sigs, r.Header.Get(webhooks.HeaderSignature))
	h.mu.Unlock()
}

func must(t *testing.T, r *testapp.Response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want %d, got %d %s", status, r.Status, r.Body)
	}
	return r.JSON()
}

func createAutomation(t *testing.T, a *testapp.App, yaml string) map[string]any {
	t.Helper()
	return must(t, a.Do("POST", "/v1/automations", map[string]any{"yaml": yaml}), 201)
}

// waitRun polls a run until its status is one of want.
func waitRun(t *testing.T, a *testapp.App, aut, run string, want ...string) map[string]any {
	t.Helper()
	var got map[string]any
	testapp.Eventually(t, 20*time.Second, func() bool {
		got = must(t, a.Do("GET", "/v1/automations/"+aut+"/runs/"+run, nil), 200)
		for _, w := range want {
			if got["status"] == w {
				return true
			}
		}
		return false
	}, "run %s never reached %v", run, want)
	return got
}

func stepSummary(run map[string]any) string {
	var parts []string
	for _, s := range run["steps"].([]any) {
		st := s.(map[string]any)
		p := fmt.Sprintf("%s:%s", st["type"], st["status"])
		if o, ok := st["outcome"].(string); ok && o != "" {
			p += ":" + o
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// TestAPITriggeredRun: an api.call run sends the template with the
// trigger's data, branches on the contact as it is, tags, sets, calls a
// signed webhook and completes; the key cannot start a second run.
func TestAPITriggeredRun(t *testing.T) {
	a := testapp.Start(t)
	sink := &hookSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	must(t, a.Do("POST", "/v1/templates", map[string]any{"name": "Welcome", "subject": "Welcome {{ trigger.name }}", "text": "Hi {{ trigger.name }} at {{ email }}", "publish": true}), 201)
	aut := createAutomation(t, a, `name: API flow
trigger: { event: api.call }
steps:
  - send: { template: welcome, from: onboarding@mailroom.test }
  - if: { field: tag, op: has, value: vip }
    then: [ { tag: { add: [was-vip] } } ]
    else: [ { exit: not-vip } ]
  - set: { plan: pro }
  - webhook: { url: `+srv.URL+`/hook }
`)
	id, secret := aut["id"].(string), aut["signing_secret"].(string)
	// At rest the secret is sealed, as webhook endpoints' secrets are.
	var stored string
	if err := a.DB.QueryRow(context.Background(), `SELECT signing_secret FROM automations WHERE id = ?`, id).Scan(&stored); err != nil ||
		stored == secret || strings.Contains(stored, secret) || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("signing secret %q stored as %q (%v)", secret, stored, err)
	}
	if got := a.Do("GET", "/v1/automations/"+id, nil).JSON()["signing_secret"]; got != secret {
		t.Fatalf("GET signing_secret %v, want %s", got, secret)
	}
	must(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "delivered+vip@mailroom.test", "tags": []string{"vip"}}), 201)

	r := must(t, a.Do("POST", "/v1/automations/"+id+"/trigger", map[string]any{"email": "delivered+vip@mailroom.test", "idempotency_key": "k1", "data": map[string]any{"name": "Ann"}}), 202)
	run := waitRun(t, a, id, r["run_id"].(string), "completed", "failed", "stopped")
	if got := stepSummary(run); got != "send:completed if:completed:then tag:completed set:completed webhook:completed" || run["status"] != "completed" || run["emails_sent"] != float64(1) {
		t.Fatalf("run %v: %s", run["status"], got)
	}
	emailID := run["steps"].([]any)[0].(map[string]any)["email_id"].(string)
	em := must(t, a.Do("GET", "/v1/emails/"+emailID, nil), 200)
	if em["subject"] != "Welcome Ann" {
		t.Errorf("email subject %v", em["subject"])
	}
	c := must(t, a.Do("GET", "/v1/contacts?lookup=delivered%2Bvip@mailroom.test", nil), 200)["contacts"].([]any)[0].(map[string]any)
	if !strings.Contains(fmt.Sprint(c["tags"]), "was-vip") || c["attributes"].(map[string]any)["plan"] != "pro" {
		t.Errorf("contact after the run: %v %v", c["tags"], c["attributes"])
	}
	sink.mu.Lock()
	if len(sink.bodies) != 1 || webhooks.Verify(sink.sigs[0], []byte(sink.bodies[0]), secret, time.Now(), time.Minute) != nil ||
		!strings.Contains(sink.bodies[0], `"name":"Ann"`) {
		t.Errorf("webhook got %v %v", sink.bodies, sink.sigs)
	}
	sink.mu.Unlock()

	// The same key answers 409 duplicate and starts nothing.
	dup := a.Do("POST", "/v1/automations/"+id+"/trigger", map[string]any{"email": "delivered+other@mailroom.test", "idempotency_key": "k1"})
	if dup.Status != 409 || dup.ErrCode() != "duplicate" {
		t.Errorf("repeat key: %d %s", dup.Status, dup.Body)
	}

	// A contact without the tag leaves by the else branch's exit; a new
	// address becomes a contact.
	r = must(t, a.Do("POST", "/v1/automations/"+id+"/trigger", map[string]any{"email": "delivered+plain@mailroom.test", "idempotency_key": "k2"}), 202)
	run = waitRun(t, a, id, r["run_id"].(string), "completed", "failed", "stopped")
	if got := stepSummary(run); run["status"] != "stopped" || got != "send:completed if:completed:else exit:completed:not-vip" {
		t.Errorf("plain run %v: %s", run["status"], got)
	}

	// A suppressed contact: the send is skipped, not failed.
	must(t, a.Do("POST", "/v1/suppressions", map[string]any{"email": "owner@example.com"}), 201)
	r = must(t, a.Do("POST", "/v1/automations/"+id+"/trigger", map[string]any{"email": "owner@example.com", "idempotency_key": "k3"}), 202)
	run = waitRun(t, a, id, r["run_id"].(string), "completed", "failed", "stopped")
	if got := stepSummary(run); !strings.HasPrefix(got, "send:skipped") || run["emails_sent"] != float64(0) {
		t.Errorf("suppressed run %v: %s", run["status"], got)
	}

	list := must(t, a.Do("GET", "/v1/automations/"+id+"/runs?status=stopped", nil), 200)["runs"].([]any)
	if len(list) != 2 { // plain and the suppressed owner: neither has the tag
		t.Errorf("stopped runs: %d", len(list))
	}
	for _, bad := range []struct {
		path string
		body any
		code string
	}{
		{"/v1/automations/" + id + "/trigger", map[string]any{"email": "x@example.com"}, "invalid_request"},
		{"/v1/automations/" + id + "/trigger", map[string]any{"idempotency_key": "z"}, "invalid_request"},
		{"/v1/automations/" + id + "/trigger", map[string]any{"email": "x@example.com", "idempotency_key": "z", "data": []int{1}}, "invalid_request"},
		{"/v1/automations/aut_nope/trigger", map[string]any{"email": "x@example.com", "idempotency_key": "z"}, "not_found"},
	} {
		if r := a.Do("POST", bad.path, bad.body); r.ErrCode() != bad.code {
			t.Errorf("%s %v: %d %s", bad.path, bad.body, r.Status, r.Body)
		}
	}
	if r := a.Do("GET", "/v1/automations/"+id+"/runs?limit=201", nil); r.Status < 400 {
		t.Errorf("limit 201: %d", r.Status)
	}
}

// TestEventTriggeredRuns: tag.added, contact.created and member.subscribed
// start one run per real change; a disabled automation starts nothing; a
// waiting run is cancelled by DELETE and by deleting its automation.
func TestEventTriggeredRuns(t *testing.T) {
	a := testapp.Start(t)
	tagged := createAutomation(t, a, "name: Tagged\ntrigger: { event: tag.added, tag: trial }\nsteps:\n  - wait: 1h\n  - tag: { add: [done] }\n")["id"].(string)
	created := createAutomation(t, a, "name: Created\ntrigger: { event: contact.created }\nsteps:\n  - tag: { add: [welcomed] }\n")["id"].(string)
	aud := must(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}), 201)["id"].(string)
	subscribed := createAutomation(t, a, "name: Subscribed\ntrigger: { event: member.subscribed, audience_id: "+aud+" }\nsteps:\n"+
		"  - if: { field: status, op: eq, value: subscribed }\n    then: [ { set: { joined: \"yes\" } } ]\n")["id"].(string)
	api := createAutomation(t, a, "name: API\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n")["id"].(string)

	c := must(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "ann@example.com"}), 201)["id"].(string)
	must(t, a.Do("POST", "/v1/contacts/"+c+"/tags", map[string]any{"tag": "trial"}), 200)
	must(t, a.Do("POST", "/v1/contacts/"+c+"/tags", map[string]any{"tag": "trial"}), 200) // no change, no run
	must(t, a.Do("POST", "/v1/contacts/"+c+"/tags", map[string]any{"tag": "other"}), 200) // another tag, no run

	runsOf := func(aut string) []any {
		return must(t, a.Do("GET", "/v1/automations/"+aut+"/runs", nil), 200)["runs"].([]any)
	}
	var waiting map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		rs := runsOf(tagged)
		if len(rs) == 1 && rs[0].(map[string]any)["status"] == "waiting" {
			waiting = rs[0].(map[string]any)
			return true
		}
		return false
	}, "no waiting run of the tag.added automation")
	if waiting["wait_until"] == nil || waiting["contact_id"] != c {
		t.Errorf("waiting run %v", waiting)
	}
	run := waitRun(t, a, created, runsOf(created)[0].(map[string]any)["run_id"].(string), "completed", "failed")
	if stepSummary(run) != "tag:completed" {
		t.Errorf("contact.created run: %s", stepSummary(run))
	}
	consumed(t, a) // every change's runs are started, and no others
	if rs := runsOf(tagged); len(rs) != 1 {
		t.Errorf("tag.added runs: %d, want 1 (one per real change)", len(rs))
	}

	// An import subscribes a member: member.subscribed with its audience.
	must(t, a.Do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "bob@example.com"}}), 201)
	testapp.Eventually(t, 10*time.Second, func() bool { return len(runsOf(subscribed)) == 1 }, "no member.subscribed run")
	run = waitRun(t, a, subscribed, runsOf(subscribed)[0].(map[string]any)["run_id"].(string), "completed", "failed")
	if stepSummary(run) != "if:completed:then set:completed" {
		t.Errorf("member.subscribed run: %s", stepSummary(run))
	}

	// DELETE cancels a waiting run; a running or finished one is refused.
	runID := waiting["run_id"].(string)
	r := must(t, a.Do("DELETE", "/v1/automations/"+tagged+"/runs/"+runID, nil), 200)
	if r["status"] != "cancelled" || !strings.HasPrefix(stepSummary(r), "wait:cancelled") {
		t.Errorf("cancelled run %v %s", r["status"], stepSummary(r))
	}
	if r := a.Do("DELETE", "/v1/automations/"+tagged+"/runs/"+runID, nil); r.Status != 409 {
		t.Errorf("cancel again: %d %s", r.Status, r.Body)
	}

	// Disabled: a new tag.added starts nothing.
	must(t, a.Do("PATCH", "/v1/automations/"+tagged, map[string]any{"enabled": false}), 200)
	must(t, a.Do("DELETE", "/v1/contacts/"+c+"/tags?tag=trial", nil), 200)
	must(t, a.Do("POST", "/v1/contacts/"+c+"/tags", map[string]any{"tag": "trial"}), 200)
	consumed(t, a)
	if rs := runsOf(tagged); len(rs) != 1 {
		t.Errorf("disabled automation started %d runs", len(rs)-1)
	}
	if r := a.Do("POST", "/v1/automations/"+tagged+"/trigger", map[string]any{"email": "x@example.com", "idempotency_key": "k"}); r.ErrCode() != "trigger_not_api_call" {
		t.Errorf("trigger on tag.added: %d %s", r.Status, r.Body)
	}

	// Deleting an automation cancels its waiting runs.
	w := must(t, a.Do("POST", "/v1/automations/"+api+"/trigger", map[string]any{"contact_id": c, "idempotency_key": "w"}), 202)["run_id"].(string)
	waitRun(t, a, api, w, "waiting")
	must(t, a.Do("DELETE", "/v1/automations/"+api, nil), 200)
	var status string
	if err := a.DB.QueryRow(t.Context(), `SELECT status FROM automation_runs WHERE id = ?`, w).Scan(&status); err != nil || status != "cancelled" {
		t.Errorf("run of a deleted automation: %q %v", status, err)
	}
}

// TestAutomationSendUsesPropertyFallback: an automation's send renders a
// declared contact property's fallback for a contact without the
// attribute, as a broadcast does, and the contact's value otherwise.
func TestAutomationSendUsesPropertyFallback(t *testing.T) {
	a := testapp.Start(t)
	must(t, a.Do("POST", "/v1/contact-properties", map[string]any{"key": "plan", "type": "string", "fallback_value": "free"}), 201)
	must(t, a.Do("POST", "/v1/templates", map[string]any{"name": "Plan", "subject": "Plan {{ plan }}", "text": "Your plan: {{ plan }}", "publish": true}), 201)
	id := createAutomation(t, a, "name: Plans\ntrigger: { event: api.call }\nsteps:\n  - send: { template: plan, from: onboarding@mailroom.test, transactional: true }\n")["id"].(string)
	must(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "delivered+pro@mailroom.test", "attributes": map[string]any{"plan": "pro"}}), 201)
	for who, want := range map[string]string{"delivered+pro@mailroom.test": "Plan pro", "delivered+none@mailroom.test": "Plan free"} {
		r := must(t, a.Do("POST", "/v1/automations/"+id+"/trigger", map[string]any{"email": who, "idempotency_key": who}), 202)
		run := waitRun(t, a, id, r["run_id"].(string), "completed", "failed", "stopped")
		if run["status"] != "completed" {
			t.Fatalf("%s: run %v", who, run)
		}
		emailID := run["steps"].([]any)[0].(map[string]any)["email_id"].(string)
		if got := must(t, a.Do("GET", "/v1/emails/"+emailID, nil), 200)["subject"]; got != want {
			t.Errorf("%s: subject %v, want %q", who, got, want)
		}
	}
}

// consumed waits until the automations area has consumed every queued
// contact event: the runs they start are written in the same transaction,
// so the runs listed after it are all there will be.
func consumed(t *testing.T, a *testapp.App) {
	t.Helper()
	testapp.Eventually(t, 10*time.Second, func() bool {
		var left int
		if err := a.DB.QueryRow(t.Context(), `SELECT count(*) FROM automation_events WHERE consumed_at IS NULL`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0
	}, "contact events still not consumed")
}
