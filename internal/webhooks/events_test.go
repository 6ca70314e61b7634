package webhooks

import (
	"slices"
	"testing"
)

func TestSequence(t *testing.T) {
	t.Parallel()
	want := map[string]int{
		"email.sent": 2, "email.delivered": 3, "email.bounced": 3, "email.complained": 4,
		"email.received": 1, "email.filtered": 1, "domain.verified": 0,
		"workspace.throttled": 0, "workspace.paused": 0, "workspace.resumed": 0,
		"automation.run.started": 0, "automation.run.failed": 0,
	}
	if len(Events()) != len(want) {
		t.Fatalf("Events() has %d names, want %d", len(Events()), len(want))
	}
	for _, e := range Events() {
		got, ok := Sequence(e)
		if !ok || got != want[e] {
			t.Errorf("Sequence(%q) = %d, %v; want %d", e, got, ok, want[e])
		}
	}
	for _, e := range []string{"email.opened", "email.clicked", "message.sent", "", "tag.added"} {
		if _, ok := Sequence(e); ok {
			t.Errorf("Sequence(%q) known; want unknown", e)
		}
	}
}

func TestNormalizeEventName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"email.sent", "email.sent", true},
		{"message.sent", "email.sent", true},
		{"message.delivered", "email.delivered", true},
		{"message.bounced", "email.bounced", true},
		{"message.complained", "email.complained", true},
		{"message.received", "email.received", true},
		{" Email.Delivered ", "email.delivered", true},
		{"workspace.paused", "workspace.paused", true},
		{"message.paused", "", false},
		{"message.opened", "", false},
		{"email.opened", "", false},
		{"tag.added", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := NormalizeEventName(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("NormalizeEventName(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestDefaultEvents(t *testing.T) {
	t.Parallel()
	d := DefaultEvents()
	if !slices.Equal(d, []string{"email.delivered", "email.bounced", "email.complained"}) {
		t.Fatalf("DefaultEvents() = %v", d)
	}
	d[0] = "changed"
	if DefaultEvents()[0] != "email.delivered" {
		t.Fatal("DefaultEvents shares its slice")
	}
}

func TestMailboxScoped(t *testing.T) {
	t.Parallel()
	for _, e := range Events() {
		want := e != "workspace.throttled" && e != "workspace.paused" && e != "workspace.resumed" &&
			e != "automation.run.started" && e != "automation.run.failed"
		if got := MailboxScoped(e); got != want {
			t.Errorf("MailboxScoped(%q) = %v, want %v", e, got, want)
		}
	}
}

func FuzzNormalizeEventName(f *testing.F) {
	for _, s := range []string{"email.sent", "message.sent", " MESSAGE.Bounced", "message.", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := NormalizeEventName(s)
		if !ok {
			return
		}
		if _, known := Sequence(got); !known {
			t.Fatalf("NormalizeEventName(%q) = %q, not a known event", s, got)
		}
		if again, _ := NormalizeEventName(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}
