package inbound_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"mailroom/internal/testkit/hostile"
)

// TestHostileStructureRefused (issue #38): through the real SMTP server,
// three feedback reports nested 10,000 deep sent unauthenticated to fbl@
// and three messages with a 9 MB folded header sent to a mailbox, all at
// once, are each refused promptly with the limit they passed (554 5.6.0,
// 552 5.3.4), nothing is stored, the node's allocation stays far under the
// 2.1 GB three such messages took, and the next message is received.
func TestHostileStructureRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 30 MB over SMTP")
	}
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")
	nested := string(hostile.NestedARF("fbl@"+host, 10000))
	folded := string(hostile.FoldedHeader(inbox, 9<<20))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	type result struct {
		what string
		err  error
		took time.Duration
	}
	results := make(chan result, 6)
	var wg sync.WaitGroup
	for range 3 {
		for _, m := range []struct{ what, rcpt, raw string }{{"nested", "fbl@" + host, nested}, {"folded", inbox, folded}} {
			wg.Go(func() {
				start := time.Now()
				err := sendNoFatal(a.SMTPAddr(), "abuse@isp.example", []string{m.rcpt}, m.raw)
				results <- result{m.what, err, time.Since(start)}
			})
		}
	}
	wg.Wait()
	close(results)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("six messages, %.1f MB allocated by the node and the clients", float64(alloc)/(1<<20))
	want := map[string]string{"nested": "554 5.6.0 message nesting too deep", "folded": "552 5.3.4 message header too large"}
	for r := range results {
		var se *smtp.SMTPError
		errors.As(r.err, &se)
		t.Logf("%s: %v in %s", r.what, r.err, r.took)
		if se == nil || !strings.HasPrefix(fmt.Sprintf("%d %d.%d.%d %s", se.Code, se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2], se.Message), want[r.what]) {
			t.Errorf("%s: %v, want %s", r.what, r.err, want[r.what])
		}
		// Most of it is sending 9 MB through a loaded test machine.
		if r.took > 10*time.Second {
			t.Errorf("%s answered after %s", r.what, r.took)
		}
	}
	// The DATA buffers (9 MB each, grown by doubling) and the clients'
	// copies are most of it.
	if alloc > 400<<20 {
		t.Errorf("%.0f MB allocated; the limit is 400 MB", float64(alloc)/(1<<20))
	}

	// Still responsive: the next message is received and nothing else was.
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, sampleMessage(inbox, "after", "after@x", "")); err != nil {
		t.Fatalf("the next message: %v", err)
	}
	var list struct{ Messages []struct{ Subject string } }
	a.Do("GET", "/v1/messages", nil).Decode(t, &list)
	if len(list.Messages) != 1 || list.Messages[0].Subject != "after" {
		t.Fatalf("stored %+v", list.Messages)
	}
}
