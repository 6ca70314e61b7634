package delivery_test

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestMXPolicyRefusesInternalAddresses: with MAILROOM_OUTBOUND_ALLOW_PRIVATE
// off, an MX host whose address is loopback, the cloud metadata address or
// loopback in the IPv4-translated form is refused without a connection (a
// listener on the port sees none), and the attempt says so in the policy's
// words, the same for each: nothing about what answered or timed out.
func TestMXPolicyRefusesInternalAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepts atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	b := setup(t, testapp.WithEnv("MAILROOM_OUTBOUND_ALLOW_PRIVATE", "false"), testapp.WithEnv("MAILROOM_SMTP_PORT", port))
	hosts := map[string]func(name string){
		"loop.test":       func(n string) { b.dns.AddA(n, "127.0.0.1") },
		"metadata.test":   func(n string) { b.dns.AddA(n, "169.254.169.254") },
		"translated.test": func(n string) { b.dns.AddAAAA(n, "::ffff:0:127.0.0.1") },
	}
	for d, add := range hosts {
		b.dns.AddMX(d, "mx."+d, 10)
		add("mx." + d)
		t.Run(d, func(t *testing.T) {
			id := b.insert(t, send{From: "news@example.com", To: []string{"a@" + d}, Subject: "s", Text: "x"})
			var r row
			testapp.Eventually(t, 20*time.Second, func() bool {
				r = b.row(t, id)
				return len(r.Recipients) == 1 && r.Recipients[0].Attempts >= 1
			}, "no attempt on %s", id)
			if msg := r.Recipients[0].Message + " " + r.LastError; !strings.Contains(msg, "address not allowed by the outbound policy") ||
				strings.Contains(msg, "refused") || strings.Contains(msg, "timeout") {
				t.Fatalf("attempt %+v, last error %q", r.Recipients[0], r.LastError)
			}
		})
	}
	if n := accepts.Load(); n != 0 || b.sink.Count() != 0 {
		t.Fatalf("%d connection(s) reached the listener on port %s, %d the sink", n, port, b.sink.Count())
	}
}
