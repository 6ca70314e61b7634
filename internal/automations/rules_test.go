package automations

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"mailroom/internal/contacts"
	"mailroom/internal/rules"
)

// TestParseWait: the wait durations a definition may hold, one rule a row.
func TestParseWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string // "" when accepted
	}{
		{"30s", 30 * time.Second, ""},
		{"15m", 15 * time.Minute, ""},
		{"2h", 2 * time.Hour, ""},
		{"2d", 48 * time.Hour, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"  45s  ", 45 * time.Second, ""},
		{"365d", 365 * 24 * time.Hour, ""},
		{"364d24h", 365 * 24 * time.Hour, ""},
		{"366d", 0, "too long"},
		{"8761h", 0, "too long"},
		{"365d1s", 0, "too long"},
		{"99999999999999999999s", 0, "too long"},
		{"0s", 0, "zero"},
		{"0h0m", 0, "zero"},
		{"", 0, "empty"},
		{"   ", 0, "empty"},
		{"1.5h", 0, "not a duration"},
		{"1H", 0, "not a duration"},
		{"h", 0, "not a duration"},
		{"1h 30m", 0, "not a duration"},
		{"-1h", 0, "not a duration"},
		{"1w", 0, "not a duration"},
		{"2 days", 0, "not a duration"},
	} {
		got, err := ParseWait(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseWait(%q) = %v, %v; want %v", c.in, got, err, c.want)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("ParseWait(%q) = %v, %v; want the error %q", c.in, got, err, c.err)
		}
	}
}

// TestWaitRefusals: what a definition's wait step says for each wrong
// form: the field, the line and a fix that names the right spelling.
func TestWaitRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, wait, field, fix string
	}{
		{"spelled days", "2 days", "steps[0].wait", "Write 2d"},
		{"spelled minutes", "15 minutes", "steps[0].wait", "Write 15m"},
		{"capital hours", "3 Hours", "steps[0].wait", "Write 3h"},
		{"abbreviated seconds", "10 sec", "steps[0].wait", "Write 10s"},
		{"a word", "soon", "steps[0].wait", "a number and a unit"},
		{"negative", "-2h", "steps[0].wait", "positive"},
		{"zero", "0m", "steps[0].wait", "positive"},
		{"over a year", "366d", "steps[0].wait", "at most 365d"},
		{"a bare number", "45", "steps[0].wait", "45m"},
		{"until past midnight", `{ until: "24:00" }`, "steps[0].wait.until", "HH:MM"},
		{"until without a leading zero", `{ until: "9:00" }`, "steps[0].wait.until", "HH:MM"},
		{"until with seconds", `{ until: "09:00:00" }`, "steps[0].wait.until", "HH:MM"},
		{"until missing", `{ }`, "steps[0].wait.until", "or wait: 2d"},
		{"unknown key beside until", `{ until: "09:00", zone: UTC }`, "steps[0].wait.zone", "only until"},
	} {
		t.Run(c.name, func(t *testing.T) {
			refusal(t, head+"  - wait: "+c.wait+"\n", c.field, 4, c.fix)
		})
	}
	for _, ok := range []string{"1h", "1h30m", `{ until: "00:00" }`, `{ until: "23:59" }`, `"2d"`} {
		def, probs := Parse([]byte(head + "  - wait: " + ok + "\n"))
		if len(probs) != 0 || len(def.Steps) != 1 || def.Steps[0].Wait == nil {
			t.Errorf("wait: %s refused: %v", ok, probs)
		}
	}
}

// TestTriggerMatches: which contact events start a run of an automation:
// its event, its tag or audience when it names one, and nothing queued
// before it existed.
func TestTriggerMatches(t *testing.T) {
	t.Parallel()
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	after, before := created.Add(time.Second), created.Add(-time.Second)
	ev := func(kind string, at time.Time, data map[string]any) contacts.AutomationEvent {
		return contacts.AutomationEvent{Kind: kind, CreatedAt: at, Data: data}
	}
	auto := func(trigger, tag, audience string) Automation {
		return Automation{Trigger: trigger, TriggerTag: tag, TriggerAudienceID: audience, CreatedAt: created}
	}
	for _, c := range []struct {
		name string
		a    Automation
		ev   contacts.AutomationEvent
		want bool
	}{
		{"tag.added, any tag", auto(EventTagAdded, "", ""), ev(EventTagAdded, after, map[string]any{"tag": "trial"}), true},
		{"tag.added, its tag", auto(EventTagAdded, "trial", ""), ev(EventTagAdded, after, map[string]any{"tag": "trial"}), true},
		{"tag.added, another tag", auto(EventTagAdded, "trial", ""), ev(EventTagAdded, after, map[string]any{"tag": "paid"}), false},
		{"tag.added, no tag in the event", auto(EventTagAdded, "trial", ""), ev(EventTagAdded, after, nil), false},
		{"tag.removed, its tag", auto(EventTagRemoved, "trial", ""), ev(EventTagRemoved, after, map[string]any{"tag": "trial"}), true},
		{"tag.removed is not tag.added", auto(EventTagAdded, "trial", ""), ev(EventTagRemoved, after, map[string]any{"tag": "trial"}), false},
		{"member.subscribed, any audience", auto(EventMemberSubscribed, "", ""), ev(EventMemberSubscribed, after, map[string]any{"audience_id": "aud_1"}), true},
		{"member.subscribed, its audience", auto(EventMemberSubscribed, "", "aud_1"), ev(EventMemberSubscribed, after, map[string]any{"audience_id": "aud_1"}), true},
		{"member.subscribed, another audience", auto(EventMemberSubscribed, "", "aud_1"), ev(EventMemberSubscribed, after, map[string]any{"audience_id": "aud_2"}), false},
		{"contact.created", auto(EventContactCreated, "", ""), ev(EventContactCreated, after, nil), true},
		{"contact.created ignores a tag in the data", auto(EventContactCreated, "", ""), ev(EventContactCreated, after, map[string]any{"tag": "x"}), true},
		{"queued before the automation existed", auto(EventContactCreated, "", ""), ev(EventContactCreated, before, nil), false},
		{"queued the instant it was created", auto(EventContactCreated, "", ""), ev(EventContactCreated, created, nil), true},
		{"api.call never comes from a contact event", auto(EventAPICall, "", ""), ev(EventContactCreated, after, nil), false},
	} {
		if got := matches(c.a, c.ev); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestWaitEndAcrossDays: TestWaitEnd's rule over midnight, a month's end
// and a now in another zone (until is always UTC).
func TestWaitEndAcrossDays(t *testing.T) {
	t.Parallel()
	at := func(day, h, m int) time.Time { return time.Date(2025, 3, day, h, m, 0, 0, time.UTC) }
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		name string
		w    WaitStep
		now  time.Time
		want time.Time
	}{
		{"a duration over midnight", WaitStep{For: 2 * 24 * time.Hour}, at(1, 23, 0), at(3, 23, 0)},
		{"until earlier today is tomorrow", WaitStep{Until: "09:00"}, at(1, 17, 30), at(2, 9, 0)},
		{"until midnight", WaitStep{Until: "00:00"}, at(1, 23, 59), at(2, 0, 0)},
		{"until across a month's end", WaitStep{Until: "06:15"}, at(31, 7, 0), time.Date(2025, 4, 1, 6, 15, 0, 0, time.UTC)},
		{"until reads UTC, whatever now's zone", WaitStep{Until: "09:00"}, time.Date(2025, 3, 1, 9, 30, 0, 0, paris), at(1, 9, 0)}, // 08:30 UTC
	} {
		if got := waitEnd(&c.w, c.now); !got.Equal(c.want) {
			t.Errorf("%s: waitEnd = %s, want %s", c.name, got.UTC(), c.want)
		}
	}
}

// TestIfStepRules: an if step's rule, parsed from the definition, read
// on a contact as the engine reads it (rules.Person: tags, attributes,
// suppression, topic opt-outs).
func TestIfStepRules(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ann := rules.Person{Email: "ann@example.com", Tags: []string{"vip"}, Attributes: map[string]string{"plan": "pro", "seats": "12"},
		CreatedAt: now.Add(-48 * time.Hour), OptedOut: []string{"top_news", "news"}}
	bob := rules.Person{Email: "bob@other.test", Attributes: map[string]string{"seats": "3"}, Suppressed: true,
		CreatedAt: now.Add(-time.Hour)}
	for _, c := range []struct {
		rule     string
		ann, bob bool // which branch each takes: true is then
	}{
		{"{ field: tag, op: has, value: vip }", true, false},
		{"{ field: tag, op: not_has, value: vip }", false, true},
		{"{ field: attributes.plan, op: eq, value: pro }", true, false},
		{"{ field: attributes.plan, op: exists }", true, false},
		{`{ field: attributes.seats, op: gt, value: "5" }`, true, false},
		{"{ field: email_domain, op: eq, value: other.test }", false, true},
		{"{ field: suppressed, op: eq, value: true }", false, true},
		{"{ field: created_at, op: within_days, value: 1 }", false, true},
		{"{ field: topic, op: subscribed, value: news }", false, true},
		{"{ field: topic, op: subscribed, value: top_news }", false, true},
		{"{ field: topic, op: not_subscribed, value: news }", true, false},
		{"{ field: topic, op: subscribed, value: digest }", true, true},
	} {
		def, probs := Parse([]byte(head + "  - if: " + c.rule + "\n    then: [ { exit: yes } ]\n"))
		if len(probs) != 0 {
			t.Errorf("%s refused: %v", c.rule, probs)
			continue
		}
		set := def.Steps[0].If.Set
		if got := set.Match(ann, now); got != c.ann {
			t.Errorf("%s on ann: %v, want %v", c.rule, got, c.ann)
		}
		if got := set.Match(bob, now); got != c.bob {
			t.Errorf("%s on bob: %v, want %v", c.rule, got, c.bob)
		}
	}
}

// TestActionStepRules: what the tag, set, webhook and exit steps hold once
// accepted.
func TestActionStepRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, step string
		check      func(s Step) bool
	}{
		{"tags are lowercased", "tag: { add: [VIP, Trial] }", func(s Step) bool {
			return strings.Join(s.Tag.Add, ",") == "vip,trial" && len(s.Tag.Remove) == 0
		}},
		{"a tag that looks like a number, quoted", `tag: { remove: ["2025"] }`, func(s Step) bool { return strings.Join(s.Tag.Remove, ",") == "2025" }},
		{"set keeps each value and null", "set: { plan: pro, seats: 3, old: null }", func(s Step) bool {
			v, had := s.Set["old"]
			return s.Set["plan"] == "pro" && fmt.Sprint(s.Set["seats"]) == "3" && had && v == nil
		}},
		{"set takes a dotted attribute name", "set: { billing.plan: pro }", func(s Step) bool { return s.Set["billing.plan"] == "pro" }},
		{"a webhook over http", "webhook: { url: http://hooks.example.test/a?b=c }", func(s Step) bool { return s.Webhook == "http://hooks.example.test/a?b=c" }},
		{"exit keeps its outcome", "exit: lost-interest", func(s Step) bool { return s.Exit == "lost-interest" }},
	} {
		def, probs := Parse([]byte(head + "  - " + c.step + "\n"))
		if len(probs) != 0 || len(def.Steps) != 1 {
			t.Errorf("%s: refused: %v", c.name, probs)
			continue
		}
		if !c.check(def.Steps[0]) {
			t.Errorf("%s: parsed %+v", c.name, def.Steps[0])
		}
	}
	for _, c := range []struct{ name, step, field, fix string }{
		{"a set name with a space", `set: { "my plan": pro }`, `steps[0].set.my plan`, "letters, digits"},
		{"an empty set", "set: {}", "steps[0].set", "null clears"},
		{"a webhook with credentials", "webhook: { url: https://u:p@example.test/h }", "steps[0].webhook.url", "without credentials"},
		{"a webhook with another key", "webhook: { url: https://example.test/h, secret: x }", "steps[0].webhook.secret", "only url"},
		{"a webhook without url", "webhook: {}", "steps[0].webhook.url", "url:"},
		{"a tag step with another key", "tag: { put: [a] }", "steps[0].tag.put", "add: and remove:"},
	} {
		t.Run(c.name, func(t *testing.T) { refusal(t, head+"  - "+c.step+"\n", c.field, 4, c.fix) })
	}
}
