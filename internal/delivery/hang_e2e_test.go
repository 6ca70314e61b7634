package delivery_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// hangingMX answers a session up to DATA's end and then never again, as a
// server that hangs after DATA; it counts the sessions it was given.
type hangingMX struct {
	ln       net.Listener
	sessions atomic.Int32
	done     chan struct{}
	wg       sync.WaitGroup
}

func startHangingMX(t *testing.T, addr string) *hangingMX {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	h := &hangingMX{ln: ln, done: make(chan struct{})}
	t.Cleanup(func() { close(h.done); ln.Close(); h.wg.Wait() })
	h.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.sessions.Add(1)
			h.wg.Go(func() { h.serve(c) })
		}
	})
	return h
}

func (h *hangingMX) serve(c net.Conn) {
	defer c.Close()
	go func() { <-h.done; c.Close() }()
	r := bufio.NewReader(c)
	io.WriteString(c, "220 hang.example ESMTP\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			io.WriteString(c, "250 hang.example\r\n")
		case cmd == "DATA":
			io.WriteString(c, "354 go on\r\n")
			for {
				l, err := r.ReadString('\n')
				if err != nil || l == ".\r\n" {
					break
				}
			}
			<-h.done // and never answer the message
			return
		default:
			io.WriteString(c, "250 ok\r\n")
		}
	}
}

// TestHangingServerIsCutOffAndHeld (#39 item 5): a receiving server that
// hangs after DATA is cut off by MAILROOM_OUTBOUND_COMMAND_TIMEOUT, not by
// the job's timeout; its domain is held back (a second email to it opens
// no session) while mail to another domain is delivered at once.
func TestHangingServerIsCutOffAndHeld(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	hang := startHangingMX(t, "127.0.0.2:"+strconv.Itoa(sink.Port()))
	dns.AddMX("hang.example", "mx.hang.example", 10)
	dns.AddA("mx.hang.example", "127.0.0.2")
	a := testapp.Start(t, testapp.WithMX(dns, sink), testapp.WithEnv("MAILROOM_OUTBOUND_COMMAND_TIMEOUT", "1s"))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	send := func(to string) string {
		t.Helper()
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": to, "subject": "Hi", "text": "hello"})
		if r.Status != 200 {
			t.Fatalf("send to %s: %d %s", to, r.Status, r.Body)
		}
		return r.JSON()["id"].(string)
	}
	began := time.Now()
	send("ann@hang.example")
	testapp.Eventually(t, 15*time.Second, func() bool { return hang.sessions.Load() == 1 }, "the hanging server was never reached")
	ok := send("bob@rcpt.example")
	testapp.Eventually(t, 10*time.Second, func() bool {
		return a.Do("GET", "/v1/emails/"+ok, nil).JSON()["status"] == "delivered"
	}, "mail to a healthy domain waited behind the hanging one")
	scrape := func() string {
		resp, err := http.Get(a.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		return strings.Contains(scrape(), `mailroom_delivery_destination_holds_total{reason="timeout"} 1`)
	}, "the hanging domain was never held back")
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("cut off after %v", took)
	}
	// Held: another email to it waits, opening no session.
	send("cy@hang.example")
	time.Sleep(2 * time.Second) // waiting for nothing to happen: the hold is a minute, its job runs at once
	if n := hang.sessions.Load(); n != 1 {
		t.Fatalf("%d sessions to a held domain", n)
	}
}
