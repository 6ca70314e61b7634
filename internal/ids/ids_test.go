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

func TestMask(t *testing.T) {
	mask := [10]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 0xff}
	em := At("em", time.UnixMilli(1795971816740))
	whd, ok := Mask("whd", em, mask)
	if !ok || !HasPrefix(whd, "whd") || len(whd) != len("whd_")+26 || whd[4:14] != em[3:13] {
		t.Fatalf("Mask(whd, %s) = %s, %v: want whd_, the same time and other random bits", em, whd, ok)
	}
	if back, ok := Mask("em", whd, mask); !ok || back != em {
		t.Errorf("Mask back = %s, %v, want %s", back, ok, em)
	}
	for _, bad := range []string{"em_short", "em", "em_0123456789abcdefghjkmnpqr!", ""} {
		if _, ok := Mask("whd", bad, mask); ok {
			t.Errorf("Mask(%q) ok", bad)
		}
	}
}
