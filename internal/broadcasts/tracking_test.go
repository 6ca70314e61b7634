package broadcasts_test

import (
	"bytes"
	"encoding/json"
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
	"mailroom/internal/tracking"
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

// TestBroadcastTrackingBooksLate (#47): a tracked broadcast's emails
// have no email_tracking row after hand-over and delivery (their flags
// are their shared row's); a person's open and click through the /t/
// routes write the email's row, with the sending domain, mail class and
// tags (broadcast_id) hand-over booked before, and count in the
// broadcast's stats, its clicked links and the analytics. An untracked
// broadcast's email counts nothing for a token naming it.
func TestBroadcastTrackingBooksLate(t *testing.T) {
	ctx := t.Context()
	sink := smtpsink.Start(t)
	fake := clock.NewFake(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	a := testapp.Start(t, testapp.WithClock(fake), testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
	aud := audience(t, a, 2)
	html := `<html><body><p>Hi {{ first_name }}, <a href="https://shop.example/deal">see your deal</a>.</p></body></html>`
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Deals",
		"html": html, "track_opens": true, "track_clicks": true}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	msgs := sink.WaitFor(2, 20*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("%d messages at the sink", len(msgs))
	}
	rows := func() int {
		t.Helper()
		var n int
		if err := a.DB.QueryRow(ctx, `SELECT COUNT(*) FROM email_tracking`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d email_tracking rows after hand-over and delivery, want 0", n)
	}
	var pixel, click string
	for _, u := range regexp.MustCompile(`(?:href|src)="([^"]+)"`).FindAllStringSubmatch(htmlPart(t, msgs[0].Data), -1) {
		switch p := strings.TrimPrefix(u[1], a.Config.PublicURL); {
		case strings.HasPrefix(p, "/t/c/"):
			click = a.URL + p
		case strings.HasPrefix(p, "/t/o/"):
			pixel = a.URL + p
		}
	}
	if pixel == "" || click == "" {
		t.Fatalf("to %v: no pixel or tracked link", msgs[0].To)
	}
	fake.Advance(time.Minute) // past the scan window: a person
	const browser = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("User-Agent", browser)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	get(pixel)
	get(click)
	get(click)
	if err := a.Tracking().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var flags, opens, clicks int
	var domain, class, tags, emailID string
	if err := a.DB.QueryRow(ctx, `SELECT t.email_id, t.flags, t.domain, t.mail_class, t.tags, t.opens, t.clicks FROM email_tracking t`).
		Scan(&emailID, &flags, &domain, &class, &tags, &opens, &clicks); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Fatalf("%d email_tracking rows after one email's open and clicks, want 1", n)
	}
	var tagMap map[string]string
	_ = json.Unmarshal([]byte(tags), &tagMap)
	if flags != tracking.TrackOpens|tracking.TrackClicks || domain != "mailroom.test" || class != "marketing" || tagMap["broadcast_id"] != bc || opens != 1 || clicks != 2 {
		t.Fatalf("row of %s: flags %d, domain %q, class %q, tags %s, opens %d, clicks %d", emailID, flags, domain, class, tags, opens, clicks)
	}
	if e := mustStatus(t, a.Do(http.MethodGet, "/v1/emails/"+emailID, nil), 200); e["to"].([]any)[0] != msgs[0].To[0] || e["opens"] != float64(1) || e["clicks"] != float64(2) {
		t.Fatalf("email %s: to %v, opens %v, clicks %v", emailID, e["to"], e["opens"], e["clicks"])
	}
	st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
	if st["opens"] != float64(1) || st["unique_opens"] != float64(1) || st["clicks"] != float64(2) || st["unique_clicks"] != float64(1) {
		t.Errorf("broadcast stats %v", st)
	}
	cl := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/clicked-links", nil), 200)["data"].([]any)
	if len(cl) != 1 || cl[0].(map[string]any)["url"] != "https://shop.example/deal" || cl[0].(map[string]any)["clicks"] != float64(2) {
		t.Errorf("clicked links %v", cl)
	}
	day := "2026-03-10"
	tot := mustStatus(t, a.Do(http.MethodGet, "/v1/analytics?from="+day+"&to="+day, nil), 200)["totals"].(map[string]any)
	if tot["opens"] != float64(1) || tot["clicks"] != float64(2) || tot["unique_opens"] != float64(1) {
		t.Errorf("analytics totals %v", tot)
	}

	// Untracked: its email's shared row has no flags; a token naming it
	// (signed by the node) counts nothing and writes no row.
	plain := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Plain", "html": html}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+plain+"/send", nil), 200)
	if n := len(sink.WaitFor(4, 20*time.Second)); n != 4 {
		t.Fatalf("%d messages at the sink", n)
	}
	var untracked string
	if err := a.DB.QueryRow(ctx, `SELECT e.id FROM emails e JOIN email_shared s ON s.id = e.shared_id WHERE s.track_flags = 0 LIMIT 1`).Scan(&untracked); err != nil {
		t.Fatal(err)
	}
	s := tracking.Signer{Box: a.Box}
	l := tracking.Link{WorkspaceID: a.WorkspaceID, EmailID: untracked, Issued: time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC), URL: "https://shop.example/deal"}
	get(a.URL + tracking.OpenPath + s.OpenToken(l))
	get(a.URL + tracking.ClickPath + s.ClickToken(l))
	if err := a.Tracking().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Errorf("%d email_tracking rows after an untracked email's tokens, want 1", n)
	}
	if e := mustStatus(t, a.Do(http.MethodGet, "/v1/emails/"+untracked, nil), 200); e["opens"] != float64(0) || e["clicks"] != float64(0) {
		t.Errorf("untracked email: opens %v, clicks %v", e["opens"], e["clicks"])
	}
	if st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+plain, nil), 200)["stats"].(map[string]any); st["opens"] != float64(0) || st["clicks"] != float64(0) {
		t.Errorf("untracked broadcast stats %v", st)
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
