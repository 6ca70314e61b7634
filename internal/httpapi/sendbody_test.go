package httpapi_test

import (
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// repeated is n copies of the byte b, made as they are read.
type repeated struct {
	b byte
	n int64
}

func (r *repeated) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for i := range p {
		p[i] = r.b
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// sendOf is a POST /v1/emails body streamed as it is sent: html of htmlLen
// bytes, then one attachment of b64 base64 characters, then pad spaces.
// chunked leaves the length undeclared.
func sendOf(a *testapp.App, htmlLen, b64, pad int64, chunked bool) *http.Request {
	head := `{"from":"onboarding@mailroom.test","to":"delivered@mailroom.test","subject":"big","html":"`
	mid := `","attachments":[{"filename":"a.bin","content_base64":"`
	tail := `"}]}`
	body := io.MultiReader(strings.NewReader(head), &repeated{'x', htmlLen}, strings.NewReader(mid), &repeated{'A', b64},
		strings.NewReader(tail), &repeated{' ', pad})
	req, _ := http.NewRequest("POST", a.URL+"/v1/emails", body)
	req.ContentLength = int64(len(head)+len(mid)+len(tail)) + htmlLen + b64 + pad
	if chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(body)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.Key)
	return req
}

// TestAttachmentLimit holds the 40 MB of attachments after base64 at
// 40,000,000 (decimal): exactly that is sent, four characters more is 413
// attachments_too_large, also when the body is over the 48 MiB cap (the
// attachments found wherever they lie, declared length or chunked); a body
// over the cap for another reason is 413 message_too_large. Bodies are
// streamed, so the test holds none of them.
func TestAttachmentLimit(t *testing.T) {
	// The one 40 MB send is held a few times over on its way (body, string,
	// decoded, assembled, stored); a soft limit makes the GC keep that modest.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(256 << 20))
	a := testapp.Start(t)
	const limit = 40_000_000
	for _, c := range []struct {
		name           string
		html, b64, pad int64
		chunked        bool
		status         int
		code           string
	}{
		{"just under the cap: 40,000,000 sent", 1, limit, 0, false, 200, ""},
		{"just over: 40,000,004", 1, limit + 4, 0, false, 413, "attachments_too_large"},
		{"over, in a body over the cap, after 10 MiB of html", 10 << 20, limit + 4, 0, false, 413, "attachments_too_large"},
		{"over, chunked, first in a body over the cap", 1, limit + 4, 10 << 20, true, 413, "attachments_too_large"},
		{"under, in a body over the cap by html", 49 << 20, 4, 0, false, 413, "message_too_large"},
		{"under, chunked, over the cap by html", 49 << 20, 4, 0, true, 413, "message_too_large"},
	} {
		r := a.Send(sendOf(a, c.html, c.b64, c.pad, c.chunked))
		if r.Status != c.status || r.ErrCode() != c.code {
			t.Errorf("%s: %d %.300s", c.name, r.Status, r.Body)
		}
	}
}

// TestPreflightLarge (#48 item 2): a dry run of a message at the 40 MB
// limit is answered with its size, built and signed, and stores nothing
// (GET /v1/emails lists no email).
func TestPreflightLarge(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(256 << 20))
	a := testapp.Start(t)
	req := sendOf(a, 1, 40_000_000, 0, false)
	req.URL.RawQuery = "dry_run=true"
	r := a.Send(req)
	p := r.JSON()
	if r.Status != 200 || p["object"] != "preflight" || p["would_send"] != true || p["size"].(float64) < 40_000_000 {
		t.Fatalf("%d: %.500s", r.Status, r.Body)
	}
	if list := a.Do("GET", "/v1/emails", nil).JSON()["data"].([]any); len(list) != 0 {
		t.Fatalf("the dry run stored %d emails", len(list))
	}
}
