package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// fitsPhone fails when the page is wider than the phone's screen.
func fitsPhone(t *testing.T, b *browser.Browser) {
	t.Helper()
	if w := browser.Eval[int](t, b, "document.documentElement.scrollWidth"); w > browser.PhoneWidth+10 {
		t.Fatalf("%s is %dpx wide on a %dpx phone", browser.Eval[string](t, b, "location.pathname"), w, browser.PhoneWidth)
	}
}

// waitFrame waits until the frame matching css shows want.
func waitFrame(t *testing.T, b *browser.Browser, css, want string) {
	t.Helper()
	testapp.Eventually(t, browser.Timeout, func() bool { return strings.Contains(b.FrameText(t, css), want) },
		"the frame %s never showed %q; it shows %q", css, want, b.FrameText(t, css))
}

// TestLaterAreasInBrowser drives the later areas in headless Chromium as a
// person would: import a CSV into an audience and read its report, edit a
// template and watch the preview follow, compose a broadcast and send it
// to a small audience until its recipients are delivered, download a
// received message's attachment, and see the workspace throttled, then
// paused, on the overview.
func TestLaterAreasInBrowser(t *testing.T) {
	b := browser.Start(t)
	dns := dnstest.Start(t)
	// A cold-sending allowance of 3 a day, SMTP for receiving mail, and
	// outbound mail into a sink that accepts it all.
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()), testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
		testapp.WithEnv("MAILROOM_COLD_START", "3"), testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
	b.Open(t, a.URL+"/sign-in")
	b.WaitText(t, "Workspace API key")
	b.Do(t, chromedp.SendKeys(chromedp.CSS("#key"), a.Key))
	b.Click(t, "#sign-in")
	b.WaitText(t, "Last 30 days")

	t.Run("edit a template; the preview follows the typing", func(t *testing.T) {
		b.Open(t, a.URL+"/templates/new")
		b.WaitText(t, "New template")
		fitsPhone(t, b)
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#t-name"), "Welcome mail"),
			chromedp.SendKeys(chromedp.CSS("#t-subject"), "Hello {{ first_name }}"),
			chromedp.SendKeys(chromedp.CSS("#t-html"), "<p>First draft for {{ first_name }}</p>"))
		testapp.Eventually(t, browser.Timeout, func() bool {
			return strings.Contains(b.FrameText(t, "#preview"), "First draft for [first_name]")
		}, "the preview never showed the typed draft: %q", b.FrameText(t, "#preview"))
		b.Click(t, "#save-template")
		b.WaitText(t, "The template is saved.")
		id := browser.Eval[string](t, b, "location.pathname.split('/').pop()")
		waitFrame(t, b, "#preview", "First draft for [first_name]")
		// Edit the saved template: the preview changes as the person types.
		browser.Eval[string](t, b, "document.querySelector('#t-html').value = ''")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#t-html"), "<h1>Second draft, {{ first_name }}</h1>"))
		waitFrame(t, b, "#preview", "Second draft, [first_name]")
		b.Click(t, "#t-publish")
		b.Click(t, "#save-template")
		b.WaitText(t, "sends use it now")
		r := a.Do("GET", "/v1/templates/"+id+"/versions", nil).JSON()
		vs := r["versions"].([]any)
		latest := vs[0].(map[string]any)
		if len(vs) != 2 || latest["published"] != true || !strings.Contains(latest["html"].(string), "Second draft") {
			t.Fatalf("after the edit: %v", r)
		}
	})
	var aud string
	t.Run("import a CSV into an audience; its report", func(t *testing.T) {
		b.Open(t, a.URL+"/audiences")
		b.WaitText(t, "New audience")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#audience-name"), "Readers"))
		b.Click(t, "#create-audience")
		b.WaitText(t, "The audience is created.")
		aud = browser.Eval[string](t, b, "location.pathname.split('/').pop()")
		// Three good rows (one an address already suppressed), a repeat, and a bad address.
		if r := a.Do("POST", "/v1/suppressions", map[string]any{"email": "gone@example.net"}); r.Status >= 300 {
			t.Fatalf("suppress: %d %s", r.Status, r.Body)
		}
		csv := filepath.Join(t.TempDir(), "readers.csv")
		rows := "email,first_name\nann@example.net,Ann\nbob@example.net,Bob\ngone@example.net,Gone\nANN@example.net,Ann again\nnot-an-address,Nobody\n"
		if err := os.WriteFile(csv, []byte(rows), 0o600); err != nil {
			t.Fatal(err)
		}
		b.Do(t, chromedp.SetUploadFiles(chromedp.CSS("#import-file"), []string{csv}))
		b.Click(t, "#import-contacts")
		// The mapping page proposes the columns' roles; a check, then the import.
		b.WaitText(t, "First rows")
		b.Click(t, "#import-check")
		b.WaitText(t, "Checked: nothing was written yet")
		b.Click(t, "#import-run")
		// The import's page: running (a progress bar, reloading itself),
		// then its report.
		b.WaitText(t, "Import: readers.csv")
		b.WaitText(t, "Imported")
		fitsPhone(t, b)
		report := map[string]string{}
		for _, id := range []string{"r-imported", "r-created", "r-held", "r-duplicates", "r-skipped"} {
			report[id] = strings.Fields(browser.Eval[string](t, b, "document.querySelector('#"+id+"').textContent"))[0]
		}
		if report["r-imported"] != "2" || report["r-created"] != "2" || report["r-held"] != "1" || report["r-duplicates"] != "1" || report["r-skipped"] != "1" {
			t.Fatalf("report %v:\n%s", report, b.Text(t))
		}
		if !strings.Contains(browser.Eval[string](t, b, "document.querySelector('#import-errors').textContent"), "not-an-address") {
			t.Fatal("the refused row is not listed")
		}
		if n := browser.Eval[int](t, b, "document.querySelectorAll('progress').length"); n != 0 {
			t.Fatal("the finished import still shows a progress bar")
		}
		members := a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).JSON()
		if d, _ := members["contacts"].([]any); len(d) != 3 {
			t.Fatalf("the audience has %v after the import", members)
		}
	})

	t.Run("compose a broadcast and send it to a small audience", func(t *testing.T) {
		b.Open(t, a.URL+"/broadcasts")
		b.Click(t, "#new-broadcast")
		b.WaitText(t, "New broadcast")
		fitsPhone(t, b)
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#b-from"), "Acme News <onboarding@mailroom.test>"),
			chromedp.SendKeys(chromedp.CSS("#b-name"), "November news"))
		b.Click(t, "#create-broadcast")
		// A bare draft says what stops it, in words.
		b.WaitText(t, "Cannot be sent yet")
		if !browser.Eval[bool](t, b, "document.querySelector('#send-now').disabled") {
			t.Fatal("a draft with problems offers Send now")
		}
		id := browser.Eval[string](t, b, "location.pathname.split('/').pop()")
		b.Click(t, "#edit summary")
		b.Do(t, chromedp.SetValue(chromedp.CSS("#b-audience"), aud), chromedp.SendKeys(chromedp.CSS("#b-subject"), "News for {{ first_name }}"))
		browser.Eval[string](t, b, "document.querySelector('#b-html').value = '<p>Hello {{ first_name }}, the news.</p>'")
		b.Click(t, "#save-broadcast")
		b.WaitText(t, "Ready to send.")
		fitsPhone(t, b)
		// The preview for one member, by address.
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#member"), "bob@example.net"))
		b.Click(t, "#preview-member")
		b.WaitText(t, "News for Bob")
		waitFrame(t, b, "iframe.message", "Hello Bob, the news.")
		b.Click(t, "#send-now")
		b.WaitText(t, "The broadcast is going out.")
		// The page reloads itself while it goes out: the recipients reach
		// delivered without a click.
		testapp.Eventually(t, 30*time.Second, func() bool {
			return browser.Eval[string](t, b, "(document.querySelector('#stat-delivered') || {}).textContent || ''") == "2"
		}, "the recipients never showed delivered:\n%s", b.Text(t))
		text := b.WaitText(t, "ann@example.net")
		if !strings.Contains(text, "skipped") || !strings.Contains(text, "gone@example.net") {
			t.Fatalf("the suppressed member is not listed as skipped:\n%s", text)
		}
		if st := a.Do("GET", "/v1/broadcasts/"+id, nil).JSON()["status"]; st != "sent" && st != "sending" {
			t.Fatalf("the broadcast is %v", st)
		}
		// A recipient's email page shows the message as Ann received it,
		// rendered on read from the broadcast's one stored body.
		var rs struct {
			Recipients []struct {
				Email   string `json:"email"`
				EmailID string `json:"email_id"`
			}
		}
		a.Do("GET", "/v1/broadcasts/"+id+"/recipients", nil).Decode(t, &rs)
		var ann string
		for _, r := range rs.Recipients {
			if r.Email == "ann@example.net" {
				ann = r.EmailID
			}
		}
		if ann == "" {
			t.Fatalf("no email for ann@example.net among %+v", rs.Recipients)
		}
		b.Open(t, a.URL+"/emails/"+ann)
		b.WaitText(t, "News for Ann")
		waitFrame(t, b, "iframe.message", "Hello Ann, the news.")
		waitFrame(t, b, "iframe.message", "Unsubscribe")
	})

	t.Run("download a received message's attachment", func(t *testing.T) {
		var list struct{ Mailboxes []struct{ Address string } }
		a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
		inbox := list.Mailboxes[0].Address
		raw := "From: Ann <ann@sender.example>\r\nTo: " + inbox + "\r\nSubject: Your invoice\r\nMessage-ID: <inv1@sender.example>\r\n" +
			"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n" +
			"--b\r\nContent-Type: text/plain\r\n\r\nAttached.\r\n" +
			"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"invoice 7.pdf\"\r\n\r\n%PDF-1.4 invoice\r\n" +
			"--b\r\nContent-Type: text/html\r\nContent-Disposition: attachment; filename=\"page.html\"\r\n\r\n<script>alert(1)</script>\r\n--b--\r\n"
		if err := smtp.SendMail(a.SMTPAddr(), nil, "ann@sender.example", []string{inbox}, []byte(raw)); err != nil {
			t.Fatalf("smtp: %v", err)
		}
		var thread string
		testapp.Eventually(t, 10*time.Second, func() bool {
			ts, _ := a.Do("GET", "/v1/threads", nil).JSON()["threads"].([]any)
			for _, x := range ts {
				if m := x.(map[string]any); m["subject"] == "Your invoice" {
					thread = m["id"].(string)
				}
			}
			return thread != ""
		}, "the message never arrived")
		b.Open(t, a.URL+"/inbox/"+thread)
		b.WaitText(t, "invoice 7.pdf")
		hrefs := browser.Eval[[]string](t, b, "[...document.querySelectorAll('ul.attachments a')].map(a => a.getAttribute('href'))")
		if len(hrefs) != 2 {
			t.Fatalf("attachment links %v", hrefs)
		}
		// Fetched with a session of its own over plain HTTP (a browser
		// download lands on disk).
		v := newVisitor(t, a)
		v.signIn(a.Key)
		for _, c := range []struct{ href, ct, body string }{{hrefs[0], "application/pdf", "%PDF-1.4 invoice"}, {hrefs[1], "text/html", "<script>"}} {
			p := v.get(c.href)
			if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), c.ct) || !strings.HasPrefix(p.body, c.body) ||
				!strings.HasPrefix(p.header.Get("Content-Disposition"), "attachment;") || !strings.Contains(p.header.Get("Content-Security-Policy"), "sandbox") ||
				p.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("%s: %d %v %q", c.href, p.status, p.header, p.body)
			}
		}
		if d := v.get(hrefs[0]).header.Get("Content-Disposition"); d != `attachment; filename="invoice 7.pdf"` {
			t.Fatalf("disposition %q", d)
		}
		// Another workspace's session finds no such attachment.
		_, keyB := a.NewWorkspace("B", "b@example.com")
		other := newVisitor(t, a)
		other.signIn(keyB)
		if p := other.get(hrefs[0]); p.status != http.StatusNotFound || strings.Contains(p.body, "invoice") {
			t.Fatalf("another workspace: %d", p.status)
		}
		// Signed out, nothing is downloaded.
		if p := newVisitor(t, a).get(hrefs[0]); p.status != http.StatusSeeOther {
			t.Fatalf("signed out: %d", p.status)
		}
	})

	t.Run("the overview shows the workspace throttled, then paused", func(t *testing.T) {
		dom := "news.example"
		a.VerifiedDomain(a.Key, dns, dom, nil)
		send := func(to string) int {
			return a.Do("POST", "/v1/emails", map[string]any{"from": "hi@" + dom, "to": to, "subject": "Hello", "text": "x"}).Status
		}
		// Sends until the day's allowance is used (the broadcast above
		// counted too): the next is refused, 429.
		refused := false
		for i := 0; i < 5 && !refused; i++ {
			switch s := send(fmt.Sprintf("n%d@example.org", i)); s {
			case http.StatusOK:
			case http.StatusTooManyRequests:
				refused = true
			default:
				t.Fatalf("send %d answered %d", i, s)
			}
		}
		if !refused {
			t.Fatal("the cold-sending throttle never refused a send")
		}
		if err := a.Policy().Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Open(t, a.URL+"/")
		text := b.WaitText(t, "Throttled")
		if !strings.Contains(text, "cold sending") || strings.Contains(text, "Paused") {
			t.Fatalf("the overview's state:\n%s", text)
		}
		if _, err := a.Policy().Pause(context.Background(), a.WorkspaceID, "bounce rate 12% over 24h", nil); err != nil {
			t.Fatal(err)
		}
		b.Do(t, chromedp.Reload())
		text = b.WaitText(t, "Paused")
		if !strings.Contains(text, "bounce rate 12% over 24h") || !strings.Contains(text, "Throttled") {
			t.Fatalf("the overview's state:\n%s", text)
		}
	})
}
