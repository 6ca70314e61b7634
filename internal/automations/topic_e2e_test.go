package automations_test

import (
	"fmt"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestIfTopicReadsTheContactsChoice: an if step on the rule topic reads
// the contact's own opt-in or opt-out, as a segment's members listing
// does: an opt-out topic holds a contact until it switches the topic off,
// an opt-in topic only once it switches it on, a required one always.
func TestIfTopicReadsTheContactsChoice(t *testing.T) {
	a := testapp.Start(t)
	for _, tp := range []map[string]any{
		{"name": "News", "key": "news"},
		{"name": "Digest", "key": "digest", "default_opt_in": false},
		{"name": "Legal", "key": "legal", "required": true},
		{"name": "Old", "key": "old"},
	} {
		must(t, a.Do("POST", "/v1/topics", tp), 201)
	}
	on, off := true, false
	cases := []struct {
		name   string
		topic  string
		op     string
		choice *bool  // the contact's own choice on the topic; nil: none
		want   string // the branch the if step takes
	}{
		{"opt-out topic, no choice", "news", "subscribed", nil, "then"},
		{"opt-out topic, switched off", "news", "subscribed", &off, "else"},
		{"opt-out topic, switched off, not_subscribed", "news", "not_subscribed", &off, "then"},
		{"opt-out topic, switched on again", "news", "subscribed", &on, "then"},
		{"opt-in topic, no choice", "digest", "subscribed", nil, "else"},
		{"opt-in topic, no choice, not_subscribed", "digest", "not_subscribed", nil, "then"},
		{"opt-in topic, switched on", "digest", "subscribed", &on, "then"},
		{"required topic, switched off everything", "legal", "subscribed", &off, "then"},
		// archived after the choice: opts nobody out, as the segment rule reads it (TestPeopleQueryOptions)
		{"archived topic, switched off before", "old", "not_subscribed", &off, "else"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			aut := createAutomation(t, a, fmt.Sprintf(`name: Topic %d
trigger: { event: api.call }
steps:
  - if: { field: topic, op: %s, value: %s }
    then: [ { exit: in } ]
    else: [ { exit: out } ]
`, i, c.op, c.topic))["id"].(string)
			email := fmt.Sprintf("reader%d@example.com", i)
			if c.choice != nil {
				pref := map[string]any{"email": email, "subscribed": *c.choice, "topic": c.topic}
				if c.topic == "legal" {
					delete(pref, "topic") // a required topic cannot be switched off: "every topic" leaves it on
				}
				must(t, a.Do("POST", "/v1/topics/preferences", pref), 200)
			}
			if c.topic == "old" {
				must(t, a.Do("PATCH", "/v1/topics/old", map[string]any{"archived": true}), 200)
			}
			r := must(t, a.Do("POST", "/v1/automations/"+aut+"/trigger", map[string]any{"email": email, "idempotency_key": email}), 202)
			run := waitRun(t, a, aut, r["run_id"].(string), "completed", "failed", "stopped")
			if got := stepSummary(run); !strings.HasPrefix(got, "if:completed:"+c.want+" ") {
				t.Fatalf("%s %s on %s: %s, want the %s branch", c.op, c.topic, email, got, c.want)
			}
		})
	}
}
