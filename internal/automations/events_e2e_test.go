package automations_test

import (
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestCustomEventsStartAutomations: a custom event defined with POST
// /v1/events starts, on POST /v1/events/send, every enabled automation whose
// trigger is event: <name>, for the contact, with the payload as trigger
// data (a send step reads it); the schema checks payloads; an automation
// cannot start on an event that is not defined.
func TestCustomEventsStartAutomations(t *testing.T) {
	a := testapp.Start(t)
	ev := must(t, a.Do("POST", "/v1/events", map[string]any{"name": "order.paid", "schema": map[string]any{"plan": "string", "at": "date"}}), 201)
	if ev["object"] != "event" || ev["name"] != "order.paid" || ev["schema"].(map[string]any)["plan"] != "string" || ev["updated_at"] != nil {
		t.Fatalf("created %v", ev)
	}
	evID := ev["id"].(string)

	// An automation on an event nobody defined is refused, naming the field.
	bad := a.Do("POST", "/v1/automations", map[string]any{"yaml": "name: Typo\ntrigger: { event: order.payd }\nsteps:\n  - wait: 1h\n"})
	if bad.Status != 400 || bad.ErrCode() != "invalid_automation" || bad.JSON()["error"].(map[string]any)["field"] != "trigger.event" {
		t.Fatalf("undefined event: %d %s", bad.Status, bad.Body)
	}
	must(t, a.Do("POST", "/v1/templates", map[string]any{"name": "Paid", "subject": "Paid: {{ trigger.plan }}", "text": "Thanks", "publish": true}), 201)
	on := createAutomation(t, a, "name: On paid\ntrigger: { event: order.paid }\nsteps:\n  - send: { template: paid, from: onboarding@mailroom.test }\n")
	off := createAutomation(t, a, "name: Off\ntrigger: { event: order.paid }\nsteps:\n  - wait: 1h\n")
	must(t, a.Do("PATCH", "/v1/automations/"+off["id"].(string), map[string]any{"enabled": false}), 200)
	createAutomation(t, a, "name: Other\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n")

	sent := must(t, a.Do("POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "delivered+paid@mailroom.test",
		"payload": map[string]any{"plan": "pro", "at": "2026-11-01T10:00:00Z"}}), 202)
	runs := sent["run_ids"].([]any)
	if sent["event"] != "order.paid" || len(runs) != 1 {
		t.Fatalf("send started %v (want only the enabled automation on the event)", sent)
	}
	run := waitRun(t, a, on["id"].(string), runs[0].(string), "completed", "failed", "stopped")
	if run["status"] != "completed" || run["trigger"].(map[string]any)["plan"] != "pro" || run["email"] != "delivered+paid@mailroom.test" {
		t.Fatalf("run %v", run)
	}
	emailID := run["steps"].([]any)[0].(map[string]any)["email_id"].(string)
	if em := must(t, a.Do("GET", "/v1/emails/"+emailID, nil), 200); em["subject"] != "Paid: pro" {
		t.Errorf("the send step read the payload as %v", em["subject"])
	}

	for _, c := range []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
	}{
		{"payload against the schema", "POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "x@example.com", "payload": map[string]any{"plan": 5}}, 422, "invalid_payload"},
		{"a date that is not one", "POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "x@example.com", "payload": map[string]any{"at": "tomorrow"}}, 422, "invalid_payload"},
		{"unknown event", "POST", "/v1/events/send", map[string]any{"event": "order.refunded", "email": "x@example.com"}, 404, "not_found"},
		{"no contact", "POST", "/v1/events/send", map[string]any{"event": "order.paid"}, 400, "invalid_request"},
		{"both contact forms", "POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "x@example.com", "contact_id": "c"}, 400, "invalid_request"},
		{"payload not an object", "POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "x@example.com", "payload": []int{1}}, 400, "invalid_request"},
		{"a contact id that is none", "POST", "/v1/events/send", map[string]any{"event": "order.paid", "contact_id": "con_nope"}, 404, "not_found"},
		{"the same name again", "POST", "/v1/events", map[string]any{"name": "order.paid"}, 409, "event_exists"},
		{"a built-in name", "POST", "/v1/events", map[string]any{"name": "tag.added"}, 400, "invalid_request"},
		{"a name with spaces", "POST", "/v1/events", map[string]any{"name": "order paid"}, 400, "invalid_request"},
		{"no name", "POST", "/v1/events", map[string]any{"schema": nil}, 400, "invalid_request"},
		{"a schema type that is none", "POST", "/v1/events", map[string]any{"name": "x.y", "schema": map[string]any{"a": "money"}}, 400, "invalid_request"},
		{"a schema that is not an object", "POST", "/v1/events", map[string]any{"name": "x.y", "schema": "string"}, 400, "invalid_request"},
		{"PATCH without schema", "PATCH", "/v1/events/" + evID, map[string]any{}, 400, "invalid_request"},
		{"unknown field", "PATCH", "/v1/events/" + evID, map[string]any{"schema": nil, "name": "z"}, 400, "invalid_request"},
	} {
		if r := a.Do(c.method, c.path, c.body); r.Status != c.status || r.ErrCode() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}

	// Read by id and by name; the schema removed, any payload passes.
	if got := must(t, a.Do("GET", "/v1/events/order.paid", nil), 200); got["id"] != evID {
		t.Errorf("by name: %v", got)
	}
	upd := must(t, a.Do("PATCH", "/v1/events/"+evID, map[string]any{"schema": nil}), 200)
	if upd["schema"] != nil || upd["updated_at"] == nil {
		t.Errorf("schema removed: %v", upd)
	}
	must(t, a.Do("POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "delivered+paid@mailroom.test", "payload": map[string]any{"plan": 5}}), 202)
	if l := must(t, a.Do("GET", "/v1/events", nil), 200); len(l["data"].([]any)) != 1 || l["object"] != "list" {
		t.Errorf("list: %v", l)
	}

	// Another workspace sees none of it.
	_, other := a.NewWorkspace("Other", "other@example.com")
	if r := a.DoKey(other, "GET", "/v1/events/"+evID, nil); r.Status != 404 {
		t.Errorf("another workspace reads the event: %d", r.Status)
	}
	if r := a.DoKey(other, "POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "x@example.com"}); r.Status != 404 {
		t.Errorf("another workspace sends the event: %d", r.Status)
	}

	del := must(t, a.Do("DELETE", "/v1/events/"+evID, nil), 200)
	if del["deleted"] != true || del["id"] != evID {
		t.Errorf("delete: %v", del)
	}
	if r := a.Do("POST", "/v1/events/send", map[string]any{"event": "order.paid", "email": "x@example.com"}); r.Status != 404 {
		t.Errorf("send after delete: %d %s", r.Status, r.Body)
	}
}
