// Command screenshots boots a node with some mail, a domain, a webhook and a
// suppression, signs in to the dashboard in headless Chromium and writes a
// PNG of each main page, for a reviewer to look at. Mail to the test
// addresses never counts in analytics, so the overview's 30 days are
// seeded with analytics.Add (what the delivery engine calls as outcomes
// commit), with made-up volumes.
//
//	go run ./bench/screenshots -out /tmp/shots [-width 390 -height 844]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"mailroom/internal/analytics"
	"mailroom/internal/app"
	"mailroom/internal/config"
	"mailroom/internal/store"
	"mailroom/internal/testkit/browser"
)

func main() {
	out := flag.String("out", "", "directory to write the PNGs to (required)")
	width := flag.Int("width", browser.PhoneWidth, "viewport width in CSS pixels")
	height := flag.Int("height", browser.PhoneHeight, "viewport height in CSS pixels")
	flag.Parse()
	if *out == "" {
		log.Fatal("screenshots: -out DIR is required")
	}
	if browser.Path() == "" {
		log.Fatal("screenshots: no Chromium installed (apt-get install chromium, or set MAILROOM_TEST_CHROMIUM)")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "mailroom-screenshots")
	defer os.RemoveAll(dir)
	env := map[string]string{
		"MAILROOM_HTTP_ADDR": "127.0.0.1:0", "MAILROOM_SMTP_ADDR": "127.0.0.1:0", "MAILROOM_DATABASE_URL": filepath.Join(dir, "mailroom.db"),
		"MAILROOM_DATA_DIR": dir, "MAILROOM_LOG_LEVEL": "error", "MAILROOM_SECRET_KEY": "screenshots-secret-key-0123456789",
		"MAILROOM_SERVICE_DOMAIN": "mailroom.test", "MAILROOM_WEBHOOK_ALLOW_PRIVATE": "true", "MAILROOM_DNS_RESOLVER": "127.0.0.1:9",
	}
	cfg, err := config.Load(config.Map(env))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	a, err := app.New(ctx, cfg, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer a.Stop(ctx)
	w, key, err := a.Workspaces.CreateWorkspace(ctx, "Acme", "owner@example.com", true)
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + a.HTTPAddr()
	ids := seed(base, key)
	ids["received"] = receive(base, key, a.SMTPAddr())
	if err := seedAnalytics(ctx, a, w.ID); err != nil {
		log.Fatal(err)
	}

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(browser.Path()), chromedp.UserDataDir(filepath.Join(dir, "chromium"))}
	for _, f := range browser.Flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		c, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			log.Fatal(err)
		}
	}
	mobile := *width < 600
	vp := []chromedp.EmulateViewportOption{}
	if mobile {
		vp = append(vp, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	// The first call starts the browser, on a context without a timeout
	// (its end would stop the browser).
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(*width), int64(*height), vp...)); err != nil {
		log.Fatal(err)
	}
	shot := func(name, path string) {
		run(chromedp.Navigate(base + path))
		c, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100)) // 100: PNG, not JPEG
		if err != nil {
			log.Fatal(err)
		}
		file := filepath.Join(*out, name+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Println(file)
	}
	// tall is shot for a page whose sandboxed frame sits below the first
	// screen: Chrome paints such a frame (a process of its own) only when
	// it is in the viewport at load, so the viewport is the page's height.
	tall := func(name, path string) {
		run(chromedp.EmulateViewport(int64(*width), 2400, vp...))
		shot(name, path)
		run(chromedp.EmulateViewport(int64(*width), int64(*height), vp...))
	}
	shot("01-sign-in", "/sign-in")
	run(chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Click(chromedp.CSS("#sign-in")), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
	shot("02-overview", "/")
	shot("03-emails", "/emails")
	shot("04-email", "/emails/"+ids["email"])
	shot("05-domains", "/domains")
	shot("06-domain", "/domains/"+ids["domain"])
	shot("07-webhooks", "/webhooks")
	shot("08-webhook", "/webhooks/"+ids["webhook"])
	shot("09-api-keys", "/api-keys")
	shot("10-suppressions", "/suppressions")
	shot("11-inbox-thread", "/inbox/"+ids["thread"])
	shot("12-automation", "/automations/"+ids["automation"])
	shot("20-inbox-received", "/inbox/"+ids["received"])
	shot("13-audience", "/audiences/"+ids["audience"])
	// A CSV import through the audience's form, to its report.
	csv := filepath.Join(dir, "subscribers.csv")
	if err := os.WriteFile(csv, []byte("email,first_name,tags\ngina@example.net,Gina,vip\nhugo@example.net,Hugo,\nold-address@example.com,Old,\ngina@example.net,Gina,\nnot-an-address,Nobody,\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	run(chromedp.Navigate(base+"/audiences/"+ids["audience"]), chromedp.SetUploadFiles(chromedp.CSS("#import-file"), []string{csv}),
		chromedp.Click(chromedp.CSS("#import-contacts")), chromedp.WaitVisible(chromedp.CSS("#import-report")))
	var job string
	c, cancel := context.WithTimeout(bctx, 30*time.Second)
	job, err = chromedp.Run(c, chromedp.Evaluate[string]("location.pathname"))
	cancel()
	if err != nil {
		log.Fatal(err)
	}
	shot("14-import-report", job)
	tall("15-template-editor", "/templates/"+ids["template"])
	shot("16-broadcast-compose", "/broadcasts/new")
	shot("17-broadcast-problems", "/broadcasts/"+ids["bare-broadcast"])
	tall("18-broadcast-draft", "/broadcasts/"+ids["broadcast"]+"?member=delivered%2Bchloe@mailroom.test")
	// The overview of a paused workspace.
	if _, err := a.Policy().Pause(ctx, w.ID, "complaint rate 0.4% over 24 hours", nil); err != nil {
		log.Fatal(err)
	}
	shot("19-overview-paused", "/")
}

// seedAnalytics counts 30 days of made-up sends for the overview's charts.
func seedAnalytics(ctx context.Context, a *app.App, workspaceID string) error {
	now := time.Now().UTC()
	return a.DB.InTx(ctx, func(tx *store.Tx) error {
		for i := range 30 {
			sent := int64(400 + (i*137)%300 + i*10)
			c := analytics.Counts{Sent: sent, Delivered: sent - int64(i%7) - 3, Bounced: int64(i%7) + 3, Complained: int64(i % 3)}
			analytics.Add(tx, workspaceID, now.AddDate(0, 0, i-29), analytics.Dims{Domain: "acme.example"}, c)
		}
		return nil
	})
}

// seed fills the workspace through the API and waits until the mail has
// its outcomes and the webhook its delivery; it returns ids to open.
func seed(base, key string) map[string]string {
	call := func(method, path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if res.StatusCode >= 300 {
			log.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
		return m
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"ok":true}`) }))
	ids := map[string]string{}
	ids["webhook"] = call("POST", "/v1/webhooks", map[string]any{"url": hook.URL + "/mailroom"})["id"].(string)
	ids["domain"] = call("POST", "/v1/domains", map[string]any{"domain": "acme.example"})["id"].(string)
	subjects := []struct{ to, subject string }{
		{"delivered@mailroom.test", "Your receipt for order #1042"},
		{"delivered+anna@mailroom.test", "Welcome to Acme, Anna"},
		{"bounced@mailroom.test", "Password reset"},
		{"complained@mailroom.test", "Weekly digest"},
		{"delivered+ben@mailroom.test", "Your invoice is ready"},
	}
	var last string
	for _, s := range subjects {
		last = call("POST", "/v1/emails", map[string]any{"from": "Acme <onboarding@mailroom.test>", "to": s.to, "subject": s.subject,
			"html": "<h1>" + s.subject + "</h1><p>Thanks for being with us.</p>", "text": s.subject, "tags": map[string]string{"kind": "transactional"}})["id"].(string)
	}
	ids["email"] = last
	call("POST", "/v1/suppressions", map[string]any{"email": "old-address@example.com", "reason": "manual"})
	ids["thread"] = call("POST", "/v1/messages", map[string]any{"to": []string{"delivered@mailroom.test"}, "subject": "Question about my order",
		"body": "Hello, could you tell me when order #1042 ships?"})["thread_id"].(string)
	req, _ := http.NewRequest("POST", base+"/v1/automations", strings.NewReader("name: Onboarding drip\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n  - wait: 1d\n"))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "text/yaml")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	var auto struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&auto)
	res.Body.Close()
	ids["automation"] = auto.ID
	ids["audience"] = call("POST", "/v1/audiences", map[string]any{"name": "Newsletter"})["id"].(string)
	var members []any
	for i, n := range []string{"anna", "ben", "chloe", "dev", "emma", "farid"} {
		members = append(members, map[string]any{"email": "delivered+" + n + "@mailroom.test", "attributes": map[string]any{"first_name": strings.ToUpper(n[:1]) + n[1:], "plan": []string{"free", "pro"}[i%2]}})
	}
	call("POST", "/v1/audiences/"+ids["audience"]+"/contacts", members)
	ids["template"] = call("POST", "/v1/templates", map[string]any{"name": "Monthly news", "subject": "News for {{ first_name }}",
		"html": "<h1>Hello {{ first_name }}</h1><p>Here is what changed at Acme this month.</p>", "variables": []any{map[string]any{"name": "first_name", "default": "there"}}, "publish": true})["id"].(string)
	ids["broadcast"] = call("POST", "/v1/broadcasts", map[string]any{"name": "November news", "from": "Acme News <onboarding@mailroom.test>", "audience_id": ids["audience"],
		"subject": "November at Acme, {{ first_name }}", "html": "<h1>Hi {{ first_name }}</h1><p>Three things changed this month.</p>"})["id"].(string)
	ids["bare-broadcast"] = call("POST", "/v1/broadcasts", map[string]any{"name": "Half-written", "from": "news@unverified.example"})["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		e := call("GET", "/v1/emails/"+last, nil)
		d, _ := call("GET", "/v1/webhooks/deliveries", nil)["deliveries"].([]any)
		if e["status"] == "delivered" && len(d) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return ids
}

// receive delivers a message with two attachments to the workspace's
// mailbox over SMTP and returns its thread's id once it is listed.
func receive(base, key, smtpAddr string) string {
	get := func(path string, v any) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(v)
	}
	var boxes struct{ Mailboxes []struct{ Address string } }
	get("/v1/mailboxes", &boxes)
	if len(boxes.Mailboxes) == 0 {
		log.Fatal("screenshots: the workspace has no mailbox")
	}
	to := boxes.Mailboxes[0].Address
	raw := "From: Dana Client <dana@client.example>\r\nTo: " + to + "\r\nSubject: Signed contract and logo\r\nMessage-ID: <contract1@client.example>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nHello, the signed contract and our logo are attached.\r\nDana\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"contract-signed.pdf\"\r\n\r\n%PDF-1.4 signed\r\n" +
		"--b\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=\"logo.png\"\r\n\r\nPNG\r\n--b--\r\n"
	if err := smtp.SendMail(smtpAddr, nil, "dana@client.example", []string{to}, []byte(raw)); err != nil {
		log.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var ts struct {
			Threads []struct{ ID, Subject string }
		}
		get("/v1/threads", &ts)
		for _, t := range ts.Threads {
			if t.Subject == "Signed contract and logo" {
				return t.ID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatal("screenshots: the received message never appeared")
	return ""
}
