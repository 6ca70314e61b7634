package automations

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const example = `name: Trial onboarding            # required
trigger:                          # required
  event: tag.added
  tag: trial
steps:
  - send:
      template: welcome
      from: Acme <hi@acme.test>
      subject: optional override
      topic: product-news
  - wait: 2d
  - if: { field: attributes.plan, op: eq, value: pro }
    then: [ { tag: { add: [pro-onboarding] } } ]
    else: [ { exit: lost-interest } ]
  - tag: { add: [onboarded], remove: [trial] }
  - set: { plan: pro, old: null }
  - webhook: { url: https://example.test/hook }
  - wait: { until: "09:00" }
`

func TestParseExample(t *testing.T) {
	d, probs := Parse([]byte(example))
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	if d.Name != "Trial onboarding" || d.Trigger.Event != "tag.added" || d.Trigger.Tag != "trial" || len(d.Steps) != 7 {
		t.Fatalf("definition %+v", d)
	}
	if d.Steps[1].Wait.For != 48*time.Hour || d.Steps[6].Wait.Until != "09:00" {
		t.Fatalf("waits %+v %+v", d.Steps[1].Wait, d.Steps[6].Wait)
	}
	if r := d.Steps[2].If; r.Rule.Field != "attributes.plan" || len(r.Then) != 1 || r.Else[0].Exit != "lost-interest" {
		t.Fatalf("if %+v", r)
	}
	if d.Steps[0].Send.Topic != "product-news" || d.Steps[0].Send.Transactional || d.Steps[3].Tag.Remove[0] != "trial" {
		t.Fatalf("steps %+v", d.Steps)
	}
}

// refusal parses src and wants a problem naming field on line.
func refusal(t *testing.T, src, field string, line int, fix string) []Problem {
	t.Helper()
	start := time.Now()
	_, probs := Parse([]byte(src))
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
	for _, p := range probs {
		if p.Field == field && p.Line == line && strings.Contains(p.Fix, fix) {
			return probs
		}
	}
	t.Fatalf("want a problem at %q line %d with fix containing %q; got %v", field, line, fix, probs)
	return nil
}

const head = "name: x\ntrigger: { event: api.call }\nsteps:\n"

func TestParseRefusals(t *testing.T) {
	cases := []struct {
		name, src, field string
		line             int
		fix              string
	}{
		{"empty", "", "", 1, "name, trigger and steps"},
		{"not a mapping", "- a\n- b\n", "", 1, "a mapping with name"},
		{"no name", "trigger: { event: api.call }\nsteps: [ { wait: 1h } ]\n", "name", 1, "Add name:"},
		{"name wrong type", "name: [a]\n" + "trigger: { event: api.call }\nsteps: [ { wait: 1h } ]\n", "name", 1, "as text"},
		{"unknown top key", head + "  - wait: 1h\nextra: 1\n", "extra", 5, "Remove it"},
		{"unknown event", "name: x\ntrigger: { event: \"tag changed\" }\nsteps: [ { wait: 1h } ]\n", "trigger.event", 2, "api.call"}, // a dotted name is a custom event's, checked at save
		{"tag on api.call", "name: x\ntrigger: { event: api.call, tag: a }\nsteps: [ { wait: 1h } ]\n", "trigger.tag", 2, "tag.added"},
		{"bad trigger tag", "name: x\ntrigger:\n  event: tag.added\n  tag: \"a,b\"\nsteps: [ { wait: 1h } ]\n", "trigger.tag", 4, "without commas"},
		{"no steps", "name: x\ntrigger: { event: api.call }\n", "steps", 1, "Add steps:"},
		{"empty steps", head[:len(head)-1] + " []\n", "steps", 3, "at least one"},
		{"wait two days", head + "  - wait: 1h\n  - wait: 2 days\n", "steps[1].wait", 5, "Write 2d"},
		{"wait negative", head + "  - wait: -1h\n", "steps[0].wait", 4, "positive"},
		{"wait zero", head + "  - wait: 0s\n", "steps[0].wait", 4, "positive"},
		{"wait no unit", head + "  - wait: 30\n", "steps[0].wait", 4, "30m"},
		{"wait too long", head + "  - wait: 400d\n", "steps[0].wait", 4, "365d"},
		{"wait until bad", head + "  - wait: { until: \"25:00\" }\n", "steps[0].wait.until", 4, "HH:MM"},
		{"wait list", head + "  - wait: [1h]\n", "steps[0].wait", 4, "a number and a unit"},
		{"duplicate key", head + "  - send:\n      template: a\n      template: b\n      from: a@b.test\n", "steps[0].send.template", 6, "once"},
		{"duplicate top key", "name: a\nname: b\ntrigger: { event: api.call }\nsteps: [ { wait: 1h } ]\n", "name", 2, "once"},
		{"two actions", head + "  - wait: 1h\n    exit: done\n", "steps[0].exit", 5, "own"},
		{"no action", head + "  - id: a\n", "steps[0]", 4, "Give the step"},
		{"unknown step", head + "  - sleep: 1h\n", "steps[0].sleep", 4, "send, wait"},
		{"send missing from", head + "  - send: { template: a }\n", "steps[0].send.from", 4, "from:"},
		{"send bad from", head + "  - send: { template: a, from: nobody }\n", "steps[0].send.from", 4, "Name <address>"},
		{"send bad topic", head + "  - send: { template: a, from: a@b.test, topic: \"x y\" }\n", "steps[0].send.topic", 4, "topic's key"},
		{"transactional not a bool", head + "  - send: { template: a, from: a@b.test, transactional: yes please }\n", "steps[0].send.transactional", 4, "transactional: true"},
		{"transactional with a topic", head + "  - send: { template: a, from: a@b.test, topic: news, transactional: true }\n", "steps[0].send.transactional", 4, "Remove topic"},
		{"if unknown op", head + "  - if: { field: tag, op: eq, value: a }\n", "steps[0].if.op", 4, "has, not_has"},
		{"if unknown field", head + "  - if: { field: plan, op: eq, value: a }\n", "steps[0].if.field", 4, "attributes.<name>"},
		{"if missing value", head + "  - if: { field: tag, op: has }\n", "steps[0].if.value", 4, "needs a value"},
		{"then without if", head + "  - wait: 1h\n    then: []\n", "steps[0].then", 5, "only with if"},
		{"bad tag", head + "  - tag: { add: [\"\"] }\n", "steps[0].tag.add[0]", 4, "1 to 64"},
		{"empty tag step", head + "  - tag: {}\n", "steps[0].tag", 4, "add: [a]"},
		{"bad webhook", head + "  - webhook: { url: ftp://x }\n", "steps[0].webhook.url", 4, "http(s)"},
		{"duplicate id", head + "  - id: a\n    wait: 1h\n  - id: a\n    wait: 2h\n", "steps[1].id", 6, "own id"},
		{"tab indentation", "name: x\ntrigger:\n\tevent: api.call\nsteps: [ { wait: 1h } ]\n", "", 3, "spaces"},
		{"alias loop", head + "  - &loop\n    if: { field: tag, op: has, value: a }\n    then: [ *loop ]\n", "steps[0]", 4, "in full"},
		{"alias", head + "  - wait: &w 1h\n  - wait: *w\n", "steps[0].wait", 4, "in full"},
		{"merge key", head + "  - send:\n      <<: { template: a }\n      from: a@b.test\n", "steps[0].send", 5, "<<"},
		{"syntax", "name: x\ntrigger: { event: api.call\nsteps: [ ]\n", "", 0, "indentation"},
		{"two documents", "name: x\n---\nname: y\n", "", 3, "one automation"},
		{"deep flow", head + "  - set: { a: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + " }\n", "", 4, "nesting"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.line == 0 {
				_, probs := Parse([]byte(c.src))
				if len(probs) == 0 || !strings.Contains(probs[0].Fix, c.fix) || probs[0].Line < 2 {
					t.Fatalf("got %v", probs)
				}
				return
			}
			refusal(t, c.src, c.field, c.line, c.fix)
		})
	}
}

// Every problem is reported, not only the first.
func TestParseReportsEveryProblem(t *testing.T) {
	src := "name: x\ntrigger: { event: \"no pe\" }\nsteps:\n  - wait: 2 days\n  - send: { template: a, from: bad }\n  - tag: { add: [\"a,b\"] }\n"
	_, probs := Parse([]byte(src))
	want := []string{"trigger.event", "steps[0].wait", "steps[1].send.from", "steps[2].tag.add[0]"}
	if len(probs) != len(want) {
		t.Fatalf("got %v", probs)
	}
	for i, w := range want {
		if probs[i].Field != w {
			t.Errorf("problem %d: %s, want %s", i, probs[i].Field, w)
		}
	}
}

func TestParseTooManySteps(t *testing.T) {
	var b strings.Builder
	b.WriteString(head)
	for i := 0; i < 10000; i++ {
		b.WriteString("  - wait: 1h\n")
	}
	// Over the size limit first: refused before parsing, with the line.
	for i := 0; i < 10000; i++ {
		b.WriteString("  - wait: 1h\n")
	}
	probs := refusal(t, b.String(), "", 1+strings.Count(b.String()[:MaxYAMLBytes], "\n"), "KiB")
	if len(probs) != 1 {
		t.Fatalf("got %v", probs)
	}
	// Within the size limit, the 101st step is named.
	b.Reset()
	b.WriteString(head)
	for i := 0; i < 150; i++ {
		b.WriteString("  - wait: 1h\n")
	}
	refusal(t, b.String(), "steps[100]", 104, "100 steps")
	// Steps inside branches count too.
	b.Reset()
	b.WriteString(head + "  - if: { field: tag, op: has, value: a }\n    then:\n")
	for i := 0; i < 100; i++ {
		b.WriteString("      - wait: 1h\n")
	}
	refusal(t, b.String(), "steps[0].then[99]", 105, "100 steps")
}

func TestParseMegabyte(t *testing.T) {
	src := head + "  - wait: 1h\n# " + strings.Repeat("x", 1<<20) + "\n"
	refusal(t, src, "", 5, "KiB")
}

// The billion laughs: refused at the first anchor, without expanding.
func TestParseYAMLBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for i := 0; i < 9; i++ {
		n := fmt.Sprintf("b%d", i)
		fmt.Fprintf(&b, "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	src := head + "  - set:\n" + indent(b.String(), "      ")
	probs := refusal(t, src, "steps[0].set.a", 5, "in full")
	if len(probs) > maxProblems+1 {
		t.Fatalf("%d problems", len(probs))
	}
}

func indent(s, p string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = p + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(head + "  - wait: 2 days\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("{[{[\"\n\t- x"))
	f.Fuzz(func(t *testing.T, src []byte) {
		d, probs := Parse(src)
		if len(probs) == 0 {
			if d.Name == "" || d.Trigger.Event == "" || len(d.Steps) == 0 {
				t.Fatalf("accepted without name, trigger or steps: %+v", d)
			}
			return
		}
		for _, p := range probs {
			if p.Line < 1 || p.Fix == "" || p.Message == "" {
				t.Fatalf("problem without line or fix: %+v", p)
			}
		}
	})
}

func TestGraph(t *testing.T) {
	d, probs := Parse([]byte(head + "  - id: s2\n    wait: 1h\n  - if: { field: tag, op: has, value: a }\n    then: [ { exit: done } ]\n  - tag: { add: [b] }\n"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	g := d.Graph()
	got := fmt.Sprint(g.Nodes, g.Edges)
	want := "[{trigger api.call} {s2 wait} {s3 if} {s4 exit} {s5 tag}] [{trigger s2 } {s2 s3 } {s3 s4 then} {s3 s5 else}]"
	if got != want {
		t.Fatalf("graph\n got %s\nwant %s", got, want)
	}
}

// TestCompileFollowsTheGraph: a run walks the same steps, under the same
// ids, as the graph draws; branches join the step after their if.
func TestCompileFollowsTheGraph(t *testing.T) {
	src := "name: x\ntrigger: { event: api.call }\nsteps:\n" +
		"  - wait: 1h\n" +
		"  - if: { field: tag, op: has, value: a }\n" +
		"    then:\n      - if: { field: tag, op: has, value: b }\n        then: [ { exit: b } ]\n" +
		"    else: [ { tag: { add: [c] } } ]\n" +
		"  - id: last\n    tag: { add: [d] }\n"
	d, problems := Parse([]byte(src))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	p := d.compile()
	got := []string{}
	for _, n := range p.nodes {
		got = append(got, fmt.Sprintf("%s:%s:%d/%d/%d", n.ID, n.Step.Type, n.Next, n.Then, n.Else))
	}
	want := []string{"s1:wait:1/-1/-1", "s2:if:5/2/4", "s3:if:5/3/5", "s4:exit:5/-1/-1", "s5:tag:5/-1/-1", "last:tag:-1/-1/-1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("program\n got %v\nwant %v", got, want)
	}
	g := d.Graph()
	for i, n := range p.nodes {
		if g.Nodes[i+1].ID != n.ID {
			t.Errorf("node %d: graph %s, program %s", i, g.Nodes[i+1].ID, n.ID)
		}
	}
}

// TestWaitEnd: a duration from now; until is the next such UTC time
// strictly after now.
func TestWaitEnd(t *testing.T) {
	now := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		w    WaitStep
		want time.Time
	}{
		{WaitStep{For: 90 * time.Minute}, now.Add(90 * time.Minute)},
		{WaitStep{Until: "10:30"}, time.Date(2026, 1, 2, 10, 30, 0, 0, time.UTC)},
		{WaitStep{Until: "09:00"}, time.Date(2026, 1, 3, 9, 0, 0, 0, time.UTC)},
		{WaitStep{Until: "08:59"}, time.Date(2026, 1, 3, 8, 59, 0, 0, time.UTC)},
	} {
		if got := waitEnd(&c.w, now); !got.Equal(c.want) {
			t.Errorf("%+v: %v, want %v", c.w, got, c.want)
		}
	}
}
