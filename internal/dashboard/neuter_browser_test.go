package dashboard_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/testapp"
)

// acceptCounter is a TCP listener that counts the connections made to it:
// the sender's side of a read receipt.
type acceptCounter struct {
	ln net.Listener
	n  atomic.Int32
}

func countAccepts(t *testing.T) *acceptCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &acceptCounter{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			conn.Close()
		}
	}()
	return c
}

// TestReceivedMessageOpensNoConnection: a received message naming a host
// in an iframe, an object, an embed, link hints (preconnect, dns-prefetch,
// prefetch, preload), a base and a meta refresh is shown in the inbox
// without Chromium connecting to that host.
func TestReceivedMessageOpensNoConnection(t *testing.T) {
	b := browser.Start(t)
	host := countAccepts(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"))
	u := "http://" + host.ln.Addr().String()
	var list struct{ Mailboxes []struct{ Address string } }
	a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
	inbox := list.Mailboxes[0].Address
	page := func(u string) string {
		return `<html><head><link rel="preconnect" href="` + u + `"><link rel="dns-prefetch" href="` + u + `">` +
			`<link rel="prefetch" href="` + u + `/p"><link rel="preload" as="image" href="` + u + `/i.png"><base href="` + u + `/">` +
			`<meta http-equiv="refresh" content="0;url=` + u + `/r"></head><body><p>Hello reader</p>` +
			`<iframe src="` + u + `/f"></iframe><object data="` + u + `/o"></object><embed src="` + u + `/e"></body></html>`
	}
	html := page(u)
	raw := "From: Spy <spy@sender.example>\r\nTo: " + inbox + "\r\nSubject: Read receipt\r\nMessage-ID: <spy1@sender.example>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html + "\r\n"
	if err := smtp.SendMail(a.SMTPAddr(), nil, "spy@sender.example", []string{inbox}, []byte(raw)); err != nil {
		t.Fatalf("smtp: %v", err)
	}
	var thread string
	testapp.Eventually(t, 10*time.Second, func() bool {
		ts, _ := a.Do("GET", "/v1/threads", nil).JSON()["threads"].([]any)
		for _, x := range ts {
			if m := x.(map[string]any); m["subject"] == "Read receipt" {
				thread = m["id"].(string)
			}
		}
		return thread != ""
	}, "the message never arrived")

	b.Open(t, a.URL+"/sign-in")
	b.WaitText(t, "Workspace API key")
	b.Do(t, chromedp.SendKeys(chromedp.CSS("#key"), a.Key))
	b.Click(t, "#sign-in")
	b.WaitText(t, "Last 30 days")
	b.Open(t, a.URL+"/inbox/"+thread)
	testapp.Eventually(t, browser.Timeout, func() bool { return strings.Contains(b.FrameText(t, "iframe.message"), "Hello reader") },
		"the message never showed")
	// The control: the same markup, not neutered, served as a page of its
	// own in a second tab opened now. Once Chromium has connected to the
	// control's host, it had the time to connect to the message's (whose
	// page loaded first) had it been going to.
	control := countAccepts(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page("http://"+control.ln.Addr().String()))
	}))
	t.Cleanup(srv.Close)
	b.NewTab(t).Open(t, srv.URL)
	testapp.Eventually(t, browser.Timeout, func() bool { return control.n.Load() > 0 }, "Chromium never connected to the control page's host")
	if n := host.n.Load(); n != 0 {
		t.Fatalf("Chromium opened %d connection(s) to the host the message names", n)
	}
}
