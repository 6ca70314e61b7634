package automations_test

import (
	"encoding/json"
	"strings"
	"testing"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
)

func step(key, typ, config string) automations.GraphStep {
	return automations.GraphStep{Key: key, Type: typ, Config: json.RawMessage(config)}
}

// TestFromGraph: a Resend chain trigger → delay → send_email is written as
// a definition that Parse accepts; what does not map is refused with the
// status and the field or step type named.
func TestFromGraph(t *testing.T) {
	trigger := step("start", "trigger", `{"event_name":"contact.created"}`)
	chain := []automations.GraphConnection{{From: "start", To: "pause"}, {From: "pause", To: "hello", Type: "default"}}
	src, err := automations.FromGraph("Welcome", []automations.GraphStep{trigger, step("pause", "delay", `{"duration":"2 days"}`),
		step("hello", "send_email", `{"template":{"id":"welcome"},"from":"hi@acme.test","subject":"Hi: there"}`)}, chain)
	if err != nil {
		t.Fatal(err)
	}
	def, problems := automations.Parse(src)
	if len(problems) > 0 || def.Name != "Welcome" || def.Trigger.Event != "contact.created" || len(def.Steps) != 2 ||
		def.Steps[0].ID != "pause" || def.Steps[0].Wait == nil || def.Steps[1].Send == nil || def.Steps[1].Send.Subject != "Hi: there" {
		t.Fatalf("%s\n%+v %v", src, def, problems)
	}

	for _, c := range []struct {
		name   string
		steps  []automations.GraphStep
		conns  []automations.GraphConnection
		status int
		word   string
	}{
		{"condition", []automations.GraphStep{trigger, step("c", "condition", `{"type":"rule"}`)}, []automations.GraphConnection{{From: "start", To: "c"}}, 422, `"condition"`},
		{"wait_for_event", []automations.GraphStep{trigger, step("w", "wait_for_event", `{}`)}, nil, 422, `"wait_for_event"`},
		{"branch", []automations.GraphStep{trigger, step("p", "delay", `{"duration":"1h"}`)},
			[]automations.GraphConnection{{From: "start", To: "p", Type: "condition_met"}}, 422, "condition_met"},
		{"variables", []automations.GraphStep{trigger, step("s", "send_email", `{"template":{"id":"t","variables":{"a":"b"}},"from":"a@b.test"}`)},
			[]automations.GraphConnection{{From: "start", To: "s"}}, 422, "template.variables"},
		{"no trigger", []automations.GraphStep{step("p", "delay", `{"duration":"1h"}`)}, nil, 400, "trigger"},
		{"bad duration", []automations.GraphStep{trigger, step("p", "delay", `{"duration":"soon"}`)},
			[]automations.GraphConnection{{From: "start", To: "p"}}, 400, "steps[1].config.duration"},
		{"unreached", []automations.GraphStep{trigger, step("p", "delay", `{"duration":"1h"}`)}, nil, 400, "steps[1]"},
		{"unknown type", []automations.GraphStep{trigger, step("x", "teleport", `{}`)}, nil, 400, `"teleport"`},
	} {
		_, err := automations.FromGraph("x", c.steps, c.conns)
		ae, ok := apierr.As(err)
		if !ok || ae.Status != c.status || !strings.Contains(ae.Message, c.word) {
			t.Errorf("%s: %v, want %d naming %s", c.name, err, c.status, c.word)
		}
	}
}
