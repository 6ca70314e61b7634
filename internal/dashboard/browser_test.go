package dashboard_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/testapp"
)

// receiver is a webhook endpoint on 127.0.0.1 that records what it gets.
type receiver struct {
	mu     sync.Mutex
	events []string // the "event" field of each body, in arrival order
	ids    []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body struct{ ID, Event string }
	_ = json.Unmarshal(b, &body)
	rc.mu.Lock()
	rc.events, rc.ids = append(rc.events, body.Event), append(rc.ids, body.ID)
	rc.mu.Unlock()
	_, _ = io.WriteString(w, "thanks <b>from the receiver</b>")
}

func (rc *receiver) got() ([]string, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.events...), append([]string(nil), rc.ids...)
}

// TestDashboardInBrowser drives the dashboard in headless Chromium on a
// phone-sized window, as a person would: sign in with a key, follow a send
// to delivered@ to its timeline, add a domain, publish the records the page
// shows and verify it, register a webhook and replay a delivery, create a
// key, and see a session end when its key is revoked. One browser serves
// every step (starting one is the slow part).
func TestDashboardInBrowser(t *testing.T) {
	b := browser.Start(t)
	dns := dnstest.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()))
	rc := &receiver{}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	signIn := func(t *testing.T, key string) {
		t.Helper()
		b.Open(t, a.URL+"/sign-in")
		b.WaitText(t, "Workspace API key")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#key"), key))
		b.Click(t, "#sign-in")
		b.WaitText(t, "Last 30 days")
	}

	t.Run("sign in", func(t *testing.T) {
		b.Open(t, a.URL+"/")
		b.WaitText(t, "Workspace API key") // signed out: the sign-in page
		signIn(t, a.Key)
		text := b.Text(t)
		for _, s := range []string{"Sending", "Sent", "Bounce rate", "Complaint rate", "Per day", "Opened", "Clicked"} {
			if !strings.Contains(text, s) {
				t.Fatalf("the overview lacks %q:\n%s", s, text)
			}
		}
		if w := browser.Eval[int](t, b, "document.documentElement.scrollWidth"); w > browser.PhoneWidth+10 {
			t.Fatalf("the overview is %dpx wide on a %dpx phone", w, browser.PhoneWidth)
		}
		// Only this origin's stylesheet and script.
		if n := browser.Eval[int](t, b, `[...document.querySelectorAll('script[src],link[href]')].filter(e => !(e.src||e.href).startsWith(location.origin)).length`); n != 0 {
			t.Fatalf("%d assets from elsewhere", n)
		}
		b.Screenshot(t, filepath.Join(os.TempDir(), "dashboard-first-steps-390.png"))
		if n := browser.Eval[int](t, b, "document.querySelectorAll('svg.chart rect').length"); n != 6*30 {
			t.Fatalf("the charts have %d bars, want %d", n, 6*30)
		}
	})

	t.Run("a send to delivered@ and its timeline", func(t *testing.T) {
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test",
			"subject": "Dashboard <check> & co", "html": "<h1>Hello from the test</h1><script>document.title='pwned'</script>"})
		id := r.JSON()["id"].(string)
		testapp.Eventually(t, 10*time.Second, func() bool {
			return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered"
		}, "the email was never delivered")
		b.Open(t, a.URL+"/emails?status=delivered")
		b.WaitText(t, "Dashboard <check> & co")
		b.Click(t, `a[href="/emails/`+id+`"]`)
		text := b.WaitText(t, "Timeline")
		for _, s := range []string{"email.accepted", "email.sent", "email.delivered", "Message-ID", "delivered@mailroom.test"} {
			if !strings.Contains(text, s) {
				t.Fatalf("the email page lacks %q:\n%s", s, text)
			}
		}
		if got := browser.Eval[string](t, b, `document.querySelector('#email-status').textContent`); got != "delivered" {
			t.Fatalf("status %q", got)
		}
		// The message is in a sandboxed frame: no script ran, here or there.
		if !browser.Eval[bool](t, b, `document.querySelector('iframe.message').hasAttribute('sandbox') && document.querySelector('iframe.message').getAttribute('sandbox') === ''`) {
			t.Fatal("the message frame is not fully sandboxed")
		}
		if strings.Contains(browser.Eval[string](t, b, "document.title"), "pwned") {
			t.Fatal("the message's script ran in the dashboard")
		}
	})

	t.Run("add a domain and read its records", func(t *testing.T) {
		b.Open(t, a.URL+"/domains")
		b.WaitText(t, "Add a domain")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#domain"), "dash-example.test"))
		b.Click(t, "#add-domain")
		text := b.WaitText(t, "Records to publish")
		for _, s := range []string{"dash-example.test", "DKIM", "SPF", "DMARC", "OWNERSHIP", "_dmarc.dash-example.test", "Proves you control the domain"} {
			if !strings.Contains(text, s) {
				t.Fatalf("the domain page lacks %q:\n%s", s, text)
			}
		}
		if w := browser.Eval[int](t, b, "document.documentElement.scrollWidth"); w > browser.PhoneWidth+10 {
			t.Fatalf("the domain page is %dpx wide on a %dpx phone", w, browser.PhoneWidth)
		}
		// Publish what the page says, read from its copy buttons (shown by
		// the script), then verify.
		type rec struct{ Type, Name, Value string }
		recs := browser.Eval[[]rec](t, b, `[...document.querySelectorAll('#records > li')].map(li => {
			const c = li.querySelectorAll('button.copy');
			return {Type: li.querySelector('.record dd').textContent.trim().split(' ')[0], Name: c[0].dataset.copy, Value: c[1].dataset.copy};
		})`)
		if hidden := browser.Eval[int](t, b, "document.querySelectorAll('button.copy[hidden]').length"); hidden != 0 || len(recs) < 5 {
			t.Fatalf("%d records, %d copy buttons hidden", len(recs), hidden)
		}
		for _, r := range recs {
			switch r.Type {
			case "TXT":
				dns.AddTXT(r.Name, r.Value)
			case "MX":
				dns.AddMX(r.Name, r.Value, 10)
			}
		}
		b.Click(t, "#verify")
		b.WaitText(t, "Records to publish")
		testapp.Eventually(t, browser.Timeout, func() bool {
			return browser.Eval[string](t, b, `document.querySelector('#domain-status') ? document.querySelector('#domain-status').textContent : ''`) == "verified"
		}, "the domain never showed verified:\n%s", b.Text(t))
	})

	t.Run("a webhook and a replayed delivery", func(t *testing.T) {
		b.Open(t, a.URL+"/webhooks")
		b.WaitText(t, "Endpoint URL")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#url"), hook.URL+"/hook"))
		b.Click(t, "#add-webhook")
		b.WaitText(t, "The webhook endpoint is created.")
		// Its signing secret is shown this once.
		secret := browser.Eval[string](t, b, "document.querySelector('#new-secret').textContent")
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("signing secret shown as %q", secret)
		}
		hooks := a.Do("GET", "/v1/webhooks", nil).JSON()["webhooks"].([]any)
		hookID := hooks[len(hooks)-1].(map[string]any)["id"].(string)
		// A send now reaches it.
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "For the hook", "text": "x"})
		if r.Status != 200 {
			t.Fatalf("send %d %s", r.Status, r.Body)
		}
		testapp.Eventually(t, 15*time.Second, func() bool {
			d, _ := a.Do("GET", "/v1/webhooks/deliveries", nil).JSON()["deliveries"].([]any)
			return len(d) > 0
		}, "no delivery was recorded")
		b.Open(t, a.URL+"/webhooks/"+hookID)
		b.WaitText(t, "email.delivered")
		if strings.Contains(b.Text(t), secret) {
			t.Fatal("the signing secret is shown again")
		}
		if got := browser.Eval[string](t, b, "document.querySelector('#deliveries pre').textContent"); got != "thanks <b>from the receiver</b>" {
			t.Fatalf("the delivery's response is shown as %q", got)
		}
		_, before := rc.got()
		b.Click(t, "button.replay")
		b.WaitText(t, "Replay: delivered")
		events, ids := rc.got()
		if len(ids) != len(before)+1 || ids[len(ids)-1] != before[len(before)-1] || events[len(events)-1] != "email.delivered" {
			t.Fatalf("the replay did not send the same event again: %v %v", events, ids)
		}
		b.Click(t, "#send-test")
		b.WaitText(t, "Test: delivered")
		b.Click(t, "#rotate-secret")
		b.WaitText(t, "The previous secret keeps verifying until")
		if rotated := browser.Eval[string](t, b, "document.querySelector('#new-secret').textContent"); !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
			t.Fatalf("rotated secret %q (was %q)", rotated, secret)
		}
	})

	t.Run("layout holds at every width", func(t *testing.T) {
		// Pills and buttons are never broken inside a word, nothing is wider
		// than the window, and from 1280 px the navigation is one row.
		defer b.Do(t, chromedp.EmulateViewport(browser.PhoneWidth, browser.PhoneHeight, chromedp.EmulateMobile, chromedp.EmulateTouch))
		for _, w := range []int64{390, 768, 1280, 1920} {
			b.Do(t, chromedp.EmulateViewport(w, 900))
			for _, page := range []string{"/", "/emails", "/webhooks", "/api-keys", "/domains", "/audiences", "/contacts", "/topics", "/segments", "/mailboxes", "/inbox", "/suppressions", "/logs"} {
				b.Open(t, a.URL+page)
				b.WaitText(t, "Sign out")
				if sw := browser.Eval[int64](t, b, "document.documentElement.scrollWidth"); sw > w+1 {
					t.Errorf("%s at %dpx is %dpx wide", page, w, sw)
				}
				broken := browser.Eval[[]string](t, b, `[...document.querySelectorAll('.badge, button, .button')].filter(e => e.offsetParent && e.getClientRects().length > 1).map(e => e.textContent.trim())`)
				if len(broken) > 0 {
					t.Errorf("%s at %dpx breaks inside %q", page, w, broken)
				}
				if (page == "/emails" || page == "/" || page == "/contacts") && w == 1280 || (page == "/" || page == "/segments") && w == 390 {
					b.Screenshot(t, filepath.Join(os.TempDir(), fmt.Sprintf("dashboard%s-%d.png", strings.ReplaceAll(page, "/", "-"), w)))
				}
				if w >= 1280 {
					if rows := browser.Eval[int64](t, b, `new Set([...document.querySelectorAll('.top nav a')].map(a => a.offsetTop)).size`); rows != 1 {
						t.Errorf("%s at %dpx: the navigation has %d rows", page, w, rows)
					}
					if hidden := browser.Eval[int64](t, b, `(n => n.scrollWidth - n.clientWidth)(document.querySelector('.top nav'))`); hidden > 0 {
						t.Errorf("%s at %dpx: %dpx of the navigation is scrolled out of sight", page, w, hidden)
					}
				}
			}
		}
	})

	t.Run("create a key; revoking a key ends its session", func(t *testing.T) {
		b.Open(t, a.URL+"/api-keys")
		b.WaitText(t, "Create key")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#name"), "from the dashboard"))
		b.Click(t, "#create-key")
		b.WaitText(t, "This is the only time the key is shown")
		key := browser.Eval[string](t, b, "document.querySelector('#new-key').textContent")
		if !strings.HasPrefix(key, "mr_") {
			t.Fatalf("new key %q", key)
		}
		if r := a.DoKey(key, "GET", "/v1/domains", nil); r.Status != 200 {
			t.Fatalf("the new key does not work: %d", r.Status)
		}
		// Sign in with the new key in place of the first, then revoke it
		// from the API: the next click lands on the sign-in page.
		b.Click(t, ".signout button")
		b.WaitText(t, "Workspace API key")
		signIn(t, key)
		var id string
		for _, k := range a.Do("GET", "/v1/api-keys", nil).JSON()["data"].([]any) {
			if m := k.(map[string]any); m["name"] == "from the dashboard" {
				id = m["id"].(string)
			}
		}
		if r := a.Do("DELETE", "/v1/api-keys/"+id, nil); r.Status != 200 {
			t.Fatalf("revoke %d", r.Status)
		}
		b.Open(t, a.URL+"/emails")
		b.WaitText(t, "Workspace API key")
		// And revoking the session's own key from the page signs it out.
		signIn(t, a.Key)
		b.Open(t, a.URL+"/api-keys")
		b.WaitText(t, "this session")
		b.Click(t, `tr:has(.badge) a.revoke`)
		b.WaitText(t, "you are signed out at once")
		b.Click(t, "#confirm")
		b.WaitText(t, "Workspace API key")
		b.Open(t, a.URL+"/domains")
		b.WaitText(t, "Workspace API key")
	})
}
