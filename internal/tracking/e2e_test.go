package tracking_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/tracking"
)

var t0 = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

type node struct {
	*testapp.App
	clock *clock.Fake
	sink  *smtpsink.Sink
	from  string
}

// start runs a node relaying to a sink, on a fake clock, and finds the
// workspace's own (verified) sending subdomain.
func start(t *testing.T) *node {
	t.Helper()
	sink := smtpsink.Start(t)
	fake := clock.NewFake(t0)
	a := testapp.Start(t, testapp.WithClock(fake),
		testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()),
		testapp.WithEnv("MAILROOM_PUBLIC_URL", "http://mailroom.test:8080"))
	r := a.Do("GET", "/v1/domains", nil)
	var doms struct {
		Data []struct{ Domain string } `json:"domains"`
	}
	r.Decode(t, &doms)
	if len(doms.Data) == 0 {
		t.Fatalf("no workspace domain: %s", r.Body)
	}
	return &node{App: a, clock: fake, sink: sink, from: "hi@" + doms.Data[0].Domain}
}

// htmlOf returns the html part of a received message.
func htmlOf(t *testing.T, raw []byte) string {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := p.Header.(*mail.InlineHeader); ok {
			ct, _, _ := h.ContentType()
			if ct == "text/html" {
				b, _ := io.ReadAll(p.Body)
				return string(b)
			}
		}
	}
	t.Fatalf("no html part in\n%s", raw)
	return ""
}

var hrefs = regexp.MustCompile(`(?:href|src)="([^"]+)"`)

// get fetches a tracking URL (rewritten to the test node) without
// following redirects.
func (n *node) get(t *testing.T, u, ua string) *http.Response {
	t.Helper()
	u = strings.Replace(u, "http://mailroom.test:8080", n.URL, 1)
	req, _ := http.NewRequest("GET", u, nil)
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

const browser = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"

// TestTrackedEmailEndToEnd: a send with track_opens and track_clicks goes
// out with its links rewritten (unsubscribe and preference pages of the
// node left alone) and a pixel; a click redirects to the signed URL only;
// a scanner's click and a proxy's open count as machine ones; people's
// count on the email and in the analytics rollups.
func TestTrackedEmailEndToEnd(t *testing.T) {
	n := start(t)
	html := `<html><body><p>Hi <a href="https://shop.example/item?id=7&amp;x=1">see the item</a>.</p>
<a href="http://mailroom.test:8080/unsubscribe/abc">unsubscribe</a> <a href="http://mailroom.test:8080/preferences/abc">preferences</a>
<a href="mailto:help@example.com">mail us</a></body></html>`
	r := n.Do("POST", "/v1/emails", map[string]any{"from": n.from, "to": []string{"ann@example.net"}, "subject": "Tracked",
		"html": html, "tags": map[string]string{"campaign": "spring"}, "track_opens": true, "track_clicks": true})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	msgs := n.sink.WaitFor(1, 20*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	body := htmlOf(t, msgs[0].Data)

	var click, pixel string
	for _, m := range hrefs.FindAllStringSubmatch(body, -1) {
		u := strings.ReplaceAll(m[1], "&amp;", "&")
		switch {
		case strings.Contains(u, "/t/c/"):
			if click != "" {
				t.Fatalf("more than one link rewritten:\n%s", body)
			}
			click = u
		case strings.Contains(u, "/t/o/"):
			pixel = u
		}
	}
	if click == "" || pixel == "" {
		t.Fatalf("no tracked link or pixel in:\n%s", body)
	}
	for _, keep := range []string{`href="http://mailroom.test:8080/unsubscribe/abc"`, `href="http://mailroom.test:8080/preferences/abc"`, `href="mailto:help@example.com"`} {
		if !strings.Contains(body, keep) {
			t.Errorf("%s was rewritten:\n%s", keep, body)
		}
	}

	// A scanner fetching the link at delivery: redirected, counted as a machine.
	res := n.get(t, click, "Go-http-client/1.1")
	if res.StatusCode != 302 || res.Header.Get("Location") != "https://shop.example/item?id=7&x=1" {
		t.Fatalf("click: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// Apple's privacy proxy fetching the pixel: a machine open.
	if res := n.get(t, pixel, "Mozilla/5.0"); res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/gif" {
		t.Fatalf("pixel: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// A person, a minute later: one open (twice), one click.
	n.clock.Advance(time.Minute)
	n.get(t, pixel, browser)
	n.get(t, pixel, browser)
	// No open redirect: the query is not read.
	res = n.get(t, click+"?url=https://evil.example/", browser)
	if loc := res.Header.Get("Location"); res.StatusCode != 302 || loc != "https://shop.example/item?id=7&x=1" {
		t.Fatalf("click with a query: %d %q", res.StatusCode, loc)
	}

	// Tampered, truncated and cross-kind tokens: a page, no redirect, no count.
	tok := click[strings.LastIndex(click, "/")+1:]
	base := click[:strings.LastIndex(click, "/")+1]
	ptok := pixel[strings.LastIndex(pixel, "/")+1:]
	bad := []string{
		base + tok[:len(tok)-3],
		base + flip(tok, 5),
		base + ptok, // an open token on the click route
		base + "x",
	}
	for _, u := range bad {
		res := n.get(t, u, browser)
		if res.StatusCode != 400 || res.Header.Get("Location") != "" {
			t.Errorf("%s: %d %q, want 400 and no redirect", u, res.StatusCode, res.Header.Get("Location"))
		}
	}
	if res := n.get(t, strings.Replace(pixel, ptok, flip(ptok, 3), 1), browser); res.StatusCode != 200 {
		t.Errorf("bad pixel: %d, want the pixel all the same", res.StatusCode)
	}

	testapp.Eventually(t, 10*time.Second, func() bool {
		e := n.Do("GET", "/v1/emails/"+id, nil).JSON()
		return e["opens"] == float64(2) && e["clicks"] == float64(1)
	}, "email counters never reached opens 2, clicks 1")

	day := t0.Format("2006-01-02")
	testapp.Eventually(t, 10*time.Second, func() bool {
		tot := n.Do("GET", "/v1/analytics?from="+day+"&to="+day, nil).JSON()["totals"].(map[string]any)
		return tot["machine_opens"] == float64(1) && tot["machine_clicks"] == float64(1)
	}, "machine counters never arrived")
	r = n.Do("GET", "/v1/analytics?from="+day+"&to="+day+"&breakdown=tag&tag_key=campaign", nil)
	if r.Status != 200 {
		t.Fatalf("analytics: %d %s", r.Status, r.Body)
	}
	var rep struct {
		Totals    map[string]any `json:"totals"`
		Breakdown struct {
			Items []map[string]any `json:"items"`
		} `json:"breakdown"`
	}
	r.Decode(t, &rep)
	want := map[string]float64{"sends": 1, "deliveries": 1, "opens": 2, "unique_opens": 1, "clicks": 1, "unique_clicks": 1,
		"machine_opens": 1, "machine_clicks": 1, "open_rate": 1, "click_rate": 1, "delivery_rate": 1}
	for k, v := range want {
		if rep.Totals[k] != v {
			t.Errorf("totals.%s = %v, want %v (%s)", k, rep.Totals[k], v, r.Body)
		}
	}
	if len(rep.Breakdown.Items) != 1 || rep.Breakdown.Items[0]["value"] != "spring" || rep.Breakdown.Items[0]["opens"] != float64(2) {
		t.Errorf("breakdown: %+v", rep.Breakdown.Items)
	}
}

// TestTokensNeverCountAgainstTheWrongMessage: a count lands only on the
// email a token names, in the workspace it names. A token naming another
// workspace (with this email's id), or an email that does not exist, is
// served harmlessly and counts nothing anywhere; the email's own token
// fetched on another workspace's tracking host counts on its own email;
// truncated and oversized tokens count nothing.
func TestTokensNeverCountAgainstTheWrongMessage(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	r := n.Do("POST", "/v1/emails", map[string]any{"from": n.from, "to": []string{"ann@example.net"}, "subject": "Tracked",
		"html": `<a href="https://shop.example/">shop</a>`, "track_opens": true, "track_clicks": true})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	if msgs := n.sink.WaitFor(1, 20*time.Second); len(msgs) != 1 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	other, otherKey, err := n.Workspaces.CreateWorkspace(ctx, "Other", "owner@other.test", true)
	if err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(time.Hour) // well past the scan window: a person's visits
	s := tracking.Signer{Box: n.Box}
	issued := t0.Truncate(time.Second)
	own := tracking.Link{WorkspaceID: n.WorkspaceID, EmailID: id, Issued: issued, URL: "https://shop.example/"}
	foreign := own
	foreign.WorkspaceID = other.ID
	missing := own
	missing.EmailID = "em_00000000000000000000000000"
	for _, l := range []tracking.Link{foreign, missing} {
		if res := n.get(t, n.URL+tracking.OpenPath+s.OpenToken(l), browser); res.StatusCode != 200 {
			t.Errorf("pixel for %+v: %d", l, res.StatusCode)
		}
		if res := n.get(t, n.URL+tracking.ClickPath+s.ClickToken(l), browser); res.StatusCode != 302 || res.Header.Get("Location") != "https://shop.example/" {
			t.Errorf("click for %+v: %d %q", l, res.StatusCode, res.Header.Get("Location"))
		}
	}
	ptok := s.OpenToken(own)
	for _, u := range []string{n.URL + tracking.OpenPath + ptok[:len(ptok)/2], n.URL + tracking.OpenPath + strings.Repeat("A", 64<<10)} {
		if res := n.get(t, u, browser); res.StatusCode != 200 {
			t.Errorf("bad pixel %.60s…: %d", u, res.StatusCode)
		}
	}
	if res := n.get(t, n.URL+tracking.ClickPath+strings.Repeat("A", 64<<10), browser); res.StatusCode != 400 || res.Header.Get("Location") != "" {
		t.Errorf("oversized click token: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if err := n.Tracking().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e := n.Do("GET", "/v1/emails/"+id, nil).JSON()
	if e["opens"] != float64(0) || e["clicks"] != float64(0) {
		t.Fatalf("email counted opens %v, clicks %v from tokens that do not name it", e["opens"], e["clicks"])
	}
	day := t0.Format("2006-01-02")
	totals := func(key string) map[string]any {
		req, _ := http.NewRequest("GET", n.URL+"/v1/analytics?from="+day+"&to="+day, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var rep struct{ Totals map[string]any }
		if err := json.NewDecoder(res.Body).Decode(&rep); err != nil || res.StatusCode != 200 {
			t.Fatalf("analytics: %d %v", res.StatusCode, err)
		}
		return rep.Totals
	}
	for _, key := range []string{n.Key, otherKey} {
		tot := totals(key)
		for _, k := range []string{"opens", "clicks", "machine_opens", "machine_clicks"} {
			if tot[k] != float64(0) {
				t.Errorf("analytics %s = %v, want 0", k, tot[k])
			}
		}
	}

	// The email's own tokens count on it, whichever host they are fetched on.
	for _, path := range []string{tracking.OpenPath + ptok, tracking.ClickPath + s.ClickToken(own)} {
		req, _ := http.NewRequest("GET", n.URL+path, nil)
		req.Host = "track.other.test"
		req.Header.Set("User-Agent", browser)
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if err := n.Tracking().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if e := n.Do("GET", "/v1/emails/"+id, nil).JSON(); e["opens"] != float64(1) || e["clicks"] != float64(1) {
		t.Fatalf("own tokens: opens %v, clicks %v, want 1 and 1", e["opens"], e["clicks"])
	}
	if tot := totals(otherKey); tot["opens"] != float64(0) || tot["clicks"] != float64(0) {
		t.Errorf("the other workspace counted %v opens, %v clicks", tot["opens"], tot["clicks"])
	}
}

func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestUntrackedSendKeepsHTML: without the flags nothing is rewritten and
// no pixel is added (the workspace default is off).
func TestUntrackedSendKeepsHTML(t *testing.T) {
	n := start(t)
	// A send to a test address first: it plays out at once and never counts.
	if r := n.Do("POST", "/v1/emails", map[string]any{"from": n.from, "to": []string{"delivered@mailroom.test"}, "subject": "T", "text": "t",
		"track_opens": true}); r.Status != 200 {
		t.Fatalf("test send: %d %s", r.Status, r.Body)
	}
	html := `<p><a href="https://shop.example/">shop</a></p>`
	r := n.Do("POST", "/v1/emails", map[string]any{"from": n.from, "to": []string{"bob@example.net"}, "subject": "Plain", "html": html})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	msgs := n.sink.WaitFor(1, 20*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("sink got %d", len(msgs))
	}
	if body := htmlOf(t, msgs[0].Data); strings.Contains(body, "/t/") || !strings.Contains(body, `href="https://shop.example/"`) {
		t.Fatalf("untracked html changed:\n%s", body)
	}
	day := t0.Format("2006-01-02")
	sends := func() any {
		return n.Do("GET", "/v1/analytics?from="+day+"&to="+day, nil).JSON()["totals"].(map[string]any)["sends"]
	}
	testapp.Eventually(t, 10*time.Second, func() bool { return sends() == float64(1) }, "the real send never counted")
	if got := sends(); got != float64(1) {
		t.Fatalf("sends %v, want 1: the test address counted", got)
	}
	if r := n.Do("POST", "/v1/emails", map[string]any{"from": n.from, "to": []string{"bob@example.net"}, "subject": "x", "text": "x", "track_opens": "yes"}); r.Status != 400 {
		t.Fatalf("track_opens \"yes\": %d %s", r.Status, r.Body)
	}
}
