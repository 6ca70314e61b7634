package ids

import (
	"strings"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	for _, prefix := range []string{"em", "whd", "req", "key", "thr"} {
		id := New(prefix)
		body, ok := strings.CutPrefix(id, prefix+"_")
		if !ok || len(body) != 26 || strings.Trim(body, "0123456789abcdefghjkmnpqrstvwxyz") != "" {
			t.Errorf("New(%q) = %q, want %s_ and 26 characters of the alphabet", prefix, id, prefix)
		}
		if !HasPrefix(id, prefix) {
			t.Errorf("HasPrefix(%q, %q) = false", id, prefix)
		}
	}
	now := time.Now()
	a := At("em", now)
	if b := At("em", now.Add(time.Millisecond)); b <= a {
		t.Errorf("an id minted a millisecond later sorts first: %q then %q", a, b)
	}
	if a == New("em") {
		t.Error("two ids alike")
	}
	if n := testing.AllocsPerRun(100, func() { _ = New("whd") }); n > 1 {
		t.Errorf("New allocates %v times, want 1", n)
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New("whd")
	}
}
