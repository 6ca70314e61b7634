package submission

import (
	"encoding/json"
	"testing"
	"time"

	"mailroom/internal/msglimit"
	"mailroom/internal/sending"
	"mailroom/internal/testkit/hostile"
)

// buildBudget is what turning a message that passed msglimit into a send
// request may cost: linear in the message (the JSON and base64 copies).
var buildBudget = hostile.Budget{Time: time.Second, TimePerByte: 200 * time.Nanosecond, Alloc: 16 << 20, AllocPerByte: 40}

// FuzzBuildRequest: any message and envelope give a send request the
// sending service can decode, or a reply; never a panic, and, for what the
// session lets through msglimit, within a time and memory budget.
func FuzzBuildRequest(f *testing.F) {
	for _, seed := range []string{
		"From: a@b.example\r\nTo: c@d.example\r\nSubject: hi\r\n\r\nbody\r\n",
		"From: \"A, B\" <a@b.example>\r\nTo: c@d.example, e@f.example\r\nCc: g@h.example\r\nBcc: x@y.example\r\nX-Mailroom-Tags: a=b, c=d\r\nIdempotency-Key: k\r\nX-Mailroom-Send-At: in 1 hour\r\n\r\nx",
		"From: a@b.example\nTo: c@d.example\nX-Folded: a\n b\nContent-Type: multipart/mixed; boundary=z\n\n--z\nContent-Type: text/html\n\n<p>x</p>\n--z\nContent-Disposition: attachment; filename=a.bin\n\nAAAA\n--z--\n",
		"X-Mailroom-Tags: nonsense\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed), "a@b.example", "c@d.example")
	}
	f.Add(hostile.FoldedHeader("c@d.example", 200<<10), "a@b.example", "c@d.example")
	f.Add(hostile.NestedARF("c@d.example", 45), "a@b.example", "c@d.example")
	f.Fuzz(func(t *testing.T, raw []byte, from, rcpt string) {
		if msglimit.Check(raw) != nil {
			return // the session refuses it before building anything
		}
		var body []byte
		var err error
		cost := hostile.Measure(func() { body, _, err = buildRequest(raw, from, []string{rcpt}) })
		if e := buildBudget.Check(cost, len(raw)+len(from)+len(rcpt)); e != nil {
			t.Fatal(e)
		}
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("not JSON: %s", body)
		}
		if _, err := sending.DecodeRequest(body); err != nil {
			t.Fatalf("the service cannot decode what was built: %v\n%s", err, body)
		}
	})
}
