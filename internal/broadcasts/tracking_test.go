package broadcasts_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"mailroom/internal/testkit/smtpsink"
)

// TestBroadcastTracking: a broadcast with track_clicks reaches each member
// with its links sent through the node's click route (which redirects to
// the member's own link) and, without track_opens, no pixel.
func TestBroadcastTracking(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 3)
	html := `<html><body><p>Hi {{ first_name }}, <a href="https://shop.example/deal?plan={{ plan }}">see your deal</a>.</p></body></html>`
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Deals",
		"html": html, "track_clicks": true}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	msgs := sink.WaitFor(3, 20*time.Second)
	if len(msgs) != 3 {
		t.Fatalf("%d messages at the sink", len(msgs))
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	href := regexp.MustCompile(`href="([^"]+)"`)
	for _, m := range msgs {
		body := htmlPart(t, m.Data)
		links := href.FindAllStringSubmatch(body, -1)
		if len(links) != 1 || !strings.HasPrefix(links[0][1], a.Config.PublicURL+"/t/c/") || strings.Contains(body, "/t/o/") {
			t.Fatalf("to %v: want one rewritten link and no pixel:\n%s", m.To, body)
		}
		res, err := client.Get(a.URL + strings.TrimPrefix(links[0][1], a.Config.PublicURL))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		plan := map[string]string{"m00000@example.net": "p0", "m00001@example.net": "p1", "m00002@example.net": "p2"}[m.To[0]]
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || loc != "https://shop.example/deal?plan="+plan {
			t.Fatalf("click for %v: %d %q", m.To, res.StatusCode, loc)
		}
	}
}

// htmlPart is the decoded text/html part of a message.
func htmlPart(t *testing.T, raw []byte) string {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			t.Fatalf("no html part in:\n%s", raw)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := p.Header.(*mail.InlineHeader); ok {
			if ct, _, _ := h.ContentType(); ct == "text/html" {
				b, _ := io.ReadAll(p.Body)
				return string(b)
			}
		}
	}
}
