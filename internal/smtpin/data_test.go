package smtpin_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"mailroom/internal/smtpin"
)

// checker takes every address and compares each message with the one
// expected next.
type checker struct {
	want []string
	got  int
	bad  []string
}

func (k *checker) Route(context.Context, string) (smtpin.Recipient, error) { return k, nil }
func (k *checker) Key() string                                             { return "checker" }
func (k *checker) Deliver(_ context.Context, _ smtpin.Envelope, raw []byte) error {
	if k.got >= len(k.want) || string(raw) != k.want[k.got] {
		k.bad = append(k.bad, fmt.Sprintf("message %d arrived as %d bytes ending %q", k.got, len(raw), raw[max(0, len(raw)-20):]))
	}
	k.got++
	return nil
}

// TestDataBufferReused: messages of 160 KB, one after another on a
// connection, reach the recipient whole and distinct, read into one
// buffer used again: under 40 KB allocated per message, where a new
// buffer per message was 160 KB (issue #47).
func TestDataBufferReused(t *testing.T) {
	k := &checker{}
	c := dial(t, start(t, smtpin.Options{Routers: []smtpin.Router{k}}))
	if r := c.reply(); !strings.HasPrefix(r, "220") {
		t.Fatal(r)
	}
	if r := c.cmd("EHLO client.example"); !strings.HasPrefix(r, "250") {
		t.Fatal(r)
	}
	const n = 20
	line := strings.Repeat("x", 78) + "\r\n"
	msgs := make([]string, n+1)
	for i := range msgs {
		msgs[i] = fmt.Sprintf("Subject: %d\r\n\r\n", i) + strings.Repeat(line, 2000) + fmt.Sprintf("end of %d\r\n", i)
	}
	raws := make([][]byte, len(msgs))
	for i, m := range msgs {
		raws[i] = []byte(m)
	}
	send := func(i int) {
		msg := msgs[i]
		for _, l := range []string{fmt.Sprintf("MAIL FROM:<a@b.example> SIZE=%d", len(msg)), "RCPT TO:<in@mailroom.test>", "DATA"} {
			if r := c.cmd(l); !strings.HasPrefix(r, "250") && !strings.HasPrefix(r, "354") {
				t.Fatalf("%s: %s", l, r)
			}
		}
		c.c.Write(raws[i]) // not io.WriteString: a copy of the string
		if r := c.cmd("."); !strings.HasPrefix(r, "250") {
			t.Fatal(r)
		}
	}
	k.want = msgs
	send(0) // a buffer for the pool
	k.want, k.got = msgs[1:], 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 1; i <= n; i++ {
		send(i)
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%d-byte messages: %.0f bytes allocated per message (client and server)", len(msgs[0]), per)
	if per > 40<<10 {
		t.Errorf("%.0f bytes allocated per %d-byte message, want under 40 KB", per, len(msgs[0]))
	}
	if len(k.bad) > 0 || k.got != n {
		t.Fatalf("%d messages arrived, want %d: %v", k.got, n, k.bad)
	}
}
