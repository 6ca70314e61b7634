package submission_test

import (
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/hostile"
)

// TestSubmitHostileStructure: a submitted message nested 10,000 deep or
// with a 9 MB folded header is refused at once with the limit it passed
// (issue #38), and the session takes the next message.
func TestSubmitHostileStructure(t *testing.T) {
	a := start(t)
	c := dial(t, a.SubmissionAddr())
	c.auth(a.Key)
	for _, tc := range []struct {
		name, raw, reply string
	}{
		{"nested", strings.Replace(string(hostile.NestedARF(delivered, 10000)), "From: abuse@isp.example", "From: "+sandbox, 1), "554 5.6.0 invalid_message: message nesting too deep"},
		{"folded", strings.Replace(string(hostile.FoldedHeader(delivered, 9<<20)), "From: a@sender.example", "From: "+sandbox, 1), "552 5.3.4 invalid_message: message header too large"},
	} {
		start := time.Now()
		reply := c.send(sandbox, []string{delivered}, strings.ReplaceAll(tc.raw, "\r\n", "\n"))
		t.Logf("%s (%d bytes): %q in %s", tc.name, len(tc.raw), reply, time.Since(start))
		if !strings.HasPrefix(reply, tc.reply) {
			t.Fatalf("%s: %q, want %q", tc.name, reply, tc.reply)
		}
	}
	idOf(t, c.send(sandbox, []string{delivered}, message("", "after the refusals")))
}
