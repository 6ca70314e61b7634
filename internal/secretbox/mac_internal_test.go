package secretbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
)

// TestMACReusesItsHMACs holds the pooled HMACs to a fresh HMAC's answer
// under concurrent use of several purposes, and to allocating only the sum.
func TestMACReusesItsHMACs(t *testing.T) {
	b, err := New("test-secret")
	if err != nil {
		t.Fatal(err)
	}
	purposes := []string{"unsubscribe", "preferences", "click"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				p := purposes[(g+i)%len(purposes)]
				data := fmt.Appendf(nil, "%d/%d/%s", g, i, p)
				ref := hmac.New(sha256.New, b.macKey(p).key)
				ref.Write(data)
				if got := b.MAC(p, data); !hmac.Equal(got, ref.Sum(nil)) {
					t.Errorf("MAC(%q, %q) differs from a fresh HMAC", p, data)
					return
				}
			}
		})
	}
	wg.Wait()
	data := []byte("payload")
	if raceOn {
		return
	}
	if n := testing.AllocsPerRun(100, func() { b.MAC("unsubscribe", data) }); n > 1 {
		t.Fatalf("MAC allocates %v objects; want only its sum", n)
	}
}
