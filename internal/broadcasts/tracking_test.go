package broadcasts_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
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
		// Besides the footer's own links (never tracked), one link.
		var links [][]string
		for _, l := range href.FindAllStringSubmatch(body, -1) {
			if !strings.Contains(l[1], "/unsubscribe/") && !strings.Contains(l[1], "/preferences/") {
				links = append(links, l)
			}
		}
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

// TestBroadcastEngagementStats: a broadcast tracking opens and clicks
// counts its emails' opens and clicks in its stats, through the real
// tracking routes: a person's open (twice) and click on one email, a
// scanner's click on another within seconds of delivery (a machine
// click, apart), and nothing for the third. GET /v1/broadcasts/{id} and
// its recipients page answer the same stats; a broadcast without
// tracking has zeros.
func TestBroadcastEngagementStats(t *testing.T) {
	sink := smtpsink.Start(t)
	fake := clock.NewFake(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	a := testapp.Start(t, testapp.WithClock(fake), testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
	aud := audience(t, a, 3)
	html := `<html><body><p>Hi {{ first_name }}, <a href="https://shop.example/deal">see your deal</a>.</p></body></html>`
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Deals",
		"html": html, "track_opens": true, "track_clicks": true}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	msgs := sink.WaitFor(3, 20*time.Second)
	if len(msgs) != 3 {
		t.Fatalf("%d messages at the sink", len(msgs))
	}
	links := map[string][2]string{} // recipient: click URL, pixel URL
	src := regexp.MustCompile(`(?:href|src)="([^"]+)"`)
	for _, m := range msgs {
		var l [2]string
		for _, u := range src.FindAllStringSubmatch(htmlPart(t, m.Data), -1) {
			switch p := strings.TrimPrefix(u[1], a.Config.PublicURL); {
			case strings.HasPrefix(p, "/t/c/"):
				l[0] = a.URL + p
			case strings.HasPrefix(p, "/t/o/"):
				l[1] = a.URL + p
			}
		}
		if l[0] == "" || l[1] == "" {
			t.Fatalf("to %v: no tracked link or pixel", m.To)
		}
		links[m.To[0]] = l
	}
	get := func(u, ua string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("User-Agent", ua)
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusFound {
			t.Fatalf("GET %s: %d", u, res.StatusCode)
		}
	}
	// A scanner follows member 1's link at delivery: a machine click.
	get(links["m00001@example.net"][0], "Go-http-client/1.1")
	// Member 0, a minute later: opens twice, clicks once.
	fake.Advance(time.Minute)
	const browser = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"
	get(links["m00000@example.net"][1], browser)
	get(links["m00000@example.net"][1], browser)
	get(links["m00000@example.net"][0], browser)

	want := map[string]float64{"opens": 2, "unique_opens": 1, "clicks": 1, "unique_clicks": 1, "machine_opens": 0, "machine_clicks": 1, "total": 3}
	matches := func(st map[string]any) bool {
		for k, v := range want {
			if st[k] != v {
				return false
			}
		}
		return true
	}
	var last map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		last = mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
		return matches(last)
	}, "broadcast stats never showed the opens and clicks")
	if st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/recipients", nil), 200)["stats"].(map[string]any); !matches(st) {
		t.Errorf("recipients page stats %v, want %v", st, want)
	}
	// Clicked links (the Resend SDKs' clickedLinks): people's clicks per URL,
	// the scanner's not counted; member 2 clicks twice.
	get(links["m00002@example.net"][0], browser)
	get(links["m00002@example.net"][0], browser)
	testapp.Eventually(t, 10*time.Second, func() bool {
		r := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/clicked-links", nil), 200)
		d, _ := r["data"].([]any)
		if len(d) != 1 || r["has_more"] != false {
			return false
		}
		l := d[0].(map[string]any)
		return l["url"] == "https://shop.example/deal" && l["clicks"] == float64(3) && l["unique_clicks"] == float64(2) && l["id"] != ""
	}, "clicked links never showed 3 clicks by 2 people on the deal")
	if r := a.Do(http.MethodGet, "/v1/broadcasts/bc_00000000000000000000000000/clicked-links", nil); r.Status != 404 {
		t.Errorf("an unknown broadcast's clicked links: %d", r.Status)
	}

	// Untracked: zeros, whatever its emails' links do.
	plain := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Plain", "html": html}), 201)["id"].(string)
	st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+plain, nil), 200)["stats"].(map[string]any)
	for _, k := range []string{"opens", "unique_opens", "clicks", "unique_clicks", "machine_opens", "machine_clicks"} {
		if st[k] != float64(0) {
			t.Errorf("untracked broadcast: %s = %v, want 0", k, st[k])
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

// TestBrowserClickCounts (#44 item 3): a person clicking a tracked
// broadcast link in a real browser, seconds after delivery (inside the
// scanner window, in headless Chromium whose agent says so), raises the
// broadcast's click counter within seconds: the click is user-activated
// (Sec-Fetch-User: ?1), which no scanner's fetch is. A plain fetch of
// another member's link at the same moment stays a machine click.
func TestBrowserClickCounts(t *testing.T) {
	b := browser.Start(t)
	landing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<p>landed</p>") }))
	defer landing.Close()
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 2)
	html := `<html><body><p>Hi, <a href="` + landing.URL + `/deal">see your deal</a>.</p></body></html>`
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Deals",
		"html": html, "track_clicks": true}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	links := map[string]string{}
	for _, m := range sink.WaitFor(2, 20*time.Second) {
		for _, u := range regexp.MustCompile(`href="([^"]+/t/c/[^"]+)"`).FindAllStringSubmatch(htmlPart(t, m.Data), -1) {
			links[m.To[0]] = a.URL + strings.TrimPrefix(u[1], a.Config.PublicURL)
		}
	}
	if len(links) != 2 {
		t.Fatalf("tracked links: %v", links)
	}
	// The reader: the message's link on a page, clicked as a person does.
	reader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<a id="deal" href="%s" style="display:block;font-size:40px">see your deal</a>`, links["m00000@example.net"])
	}))
	defer reader.Close()
	b.Open(t, reader.URL)
	b.Click(t, "#deal")
	b.WaitText(t, "landed")
	if r, err := http.Get(links["m00001@example.net"]); err == nil { // a scanner's fetch
		r.Body.Close()
	}
	var st map[string]any
	testapp.Eventually(t, 5*time.Second, func() bool {
		st = mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
		return st["clicks"] == float64(1) && st["machine_clicks"] == float64(1)
	}, "the browser click never counted")
}
