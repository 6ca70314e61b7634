package submission

import (
	"encoding/json"
	"testing"

	"mailroom/internal/sending"
)

// FuzzBuildRequest: any message and envelope give a send request the
// sending service can decode, or a reply; never a panic.
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
	f.Fuzz(func(t *testing.T, raw []byte, from, rcpt string) {
		body, _, err := buildRequest(raw, from, []string{rcpt})
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
