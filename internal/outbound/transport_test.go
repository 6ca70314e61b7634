package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
)

// loopResolver answers every MX query with one exchanger on 127.0.0.1,
// except for the domains it is told about.
type loopResolver struct {
	mx      map[string][]MX // overrides by domain
	missing map[string]bool // NXDOMAIN
}

func (r loopResolver) LookupMX(_ context.Context, domain string) ([]MX, error) {
	if r.missing[domain] {
		return nil, &net.DNSError{Err: "no such host", Name: domain, IsNotFound: true}
	}
	if mx, ok := r.mx[domain]; ok {
		return mx, nil
	}
	return []MX{{Host: "mx." + domain + ".", Pref: 10}}, nil
}

func (r loopResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if r.missing[host] {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if strings.HasPrefix(host, "dead.") {
		return []string{"127.0.0.2"}, nil // nothing listens there on the sink's port
	}
	return []string{"127.0.0.1"}, nil
}

func signedSample(t testing.TB) []byte {
	t.Helper()
	raw, err := Build(sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := NewSigner("example.com", "mr1", testRSAKey(t)).Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// checkReceived asserts what a recipient's server got is intact: MIME
// structure, attachment bytes, no Bcc, and a DKIM signature that verifies.
func checkReceived(t *testing.T, got []byte) {
	t.Helper()
	if bytes.Contains(got, []byte("secret@")) {
		t.Error("Bcc leaked into the message")
	}
	p := parse(t, got)
	if !bytes.Equal(p.attachments["report.pdf"], sampleMessage().Attachments[0].Data) {
		t.Error("attachment changed in transit")
	}
	if s, _ := p.header.Subject(); s != sampleMessage().Subject {
		t.Errorf("subject %q", s)
	}
	verifyDKIM(t, got, "example.com", "mr1", testRSAKey(t).Public())
}

func TestMXEndToEnd(t *testing.T) {
	t.Parallel()
	srvTLS, _ := smtpsink.SelfSigned(t)
	sink := smtpsink.Start(t, smtpsink.WithTLS(srvTLS))
	tr := NewMX(loopResolver{}, MXOptions{Port: sink.Port(), HeloName: "out.example.com"})
	t.Cleanup(func() { _ = tr.Close() })
	data := signedSample(t)

	env := Envelope{From: "bounces+em_1@example.com", To: []string{
		"alice@dest.test", "reject-bob@dest.test", "defer-carol@dest.test", "dave@other.test",
	}}
	res, err := tr.Send(context.Background(), env, data)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ok        bool
		code      int
		enhanced  string
		temporary bool
	}{{true, 250, "", false}, {false, 550, "5.1.1", false}, {false, 451, "4.7.1", true}, {true, 250, "", false}}
	for i, w := range want {
		r := res.Rcpts[i]
		if r.Rcpt != env.To[i] || r.OK != w.ok || r.Code != w.code || r.Temporary != w.temporary || (w.enhanced != "" && r.Enhanced != w.enhanced) {
			t.Errorf("rcpt %d: %+v, want %+v", i, r, w)
		}
	}
	msgs := sink.WaitFor(2, 5*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("sink got %d messages, want one per domain", len(msgs))
	}
	for _, m := range msgs {
		if m.From != env.From || !m.TLS {
			t.Errorf("MAIL FROM %q, TLS %v", m.From, m.TLS)
		}
		checkReceived(t, m.Data)
	}
}

func TestMXFailures(t *testing.T) {
	t.Parallel()
	sink := smtpsink.Start(t)
	res := loopResolver{
		missing: map[string]bool{"nowhere.test": true},
		mx: map[string][]MX{
			"null.test":     {{Host: ".", Pref: 0}},
			"fallback.test": {{Host: "mx2.fallback.test", Pref: 20}, {Host: "dead.fallback.test", Pref: 5}},
			"alldead.test":  {{Host: "dead.alldead.test", Pref: 5}},
			"implicit.test": {},
		},
	}
	tr := NewMX(res, MXOptions{Port: sink.Port(), DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = tr.Close() })
	data := []byte("Subject: x\r\n\r\nbody\r\n")
	tests := []struct {
		rcpt      string
		wantErr   bool
		temporary bool
		ok        bool
	}{
		{rcpt: "a@nowhere.test", wantErr: true, temporary: false},
		{rcpt: "a@null.test", wantErr: true, temporary: false},
		{rcpt: "a@alldead.test", wantErr: true, temporary: true},
		{rcpt: "drop@dest.test", wantErr: true, temporary: true},
		{rcpt: "a@fallback.test", ok: true},
		{rcpt: "a@implicit.test", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.rcpt, func(t *testing.T) {
			r, err := tr.Send(context.Background(), Envelope{From: "b@example.com", To: []string{tt.rcpt}}, data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if err != nil && IsTemporary(err) != tt.temporary {
				t.Fatalf("temporary=%v for %v", IsTemporary(err), err)
			}
			if len(r.Rcpts) != 1 || r.Rcpts[0].OK != tt.ok || (!tt.ok && r.Rcpts[0].Temporary != tt.temporary) {
				t.Fatalf("rcpts %+v", r.Rcpts)
			}
		})
	}
}

func TestRelayAuthStartTLS(t *testing.T) {
	t.Parallel()
	srvTLS, roots := smtpsink.SelfSigned(t)
	sink := smtpsink.Start(t, smtpsink.WithAuth("user", "p@ss"), smtpsink.WithTLS(srvTLS))
	tr, err := NewRelay(fmt.Sprintf("smtp://user:p%%40ss@localhost:%d", sink.Port()), RelayOptions{TLSConfig: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	env := Envelope{From: "a@example.com", To: []string{"x@one.test", "reject@two.test", "y@three.test"}}
	res, err := tr.Send(context.Background(), env, signedSample(t))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rcpts[0].OK || res.Rcpts[1].OK || res.Rcpts[1].Code != 550 || !res.Rcpts[2].OK {
		t.Fatalf("%+v", res.Rcpts)
	}
	msgs := sink.WaitFor(1, 5*time.Second)
	if len(msgs) != 1 || len(msgs[0].To) != 2 || !msgs[0].TLS {
		t.Fatalf("relay should carry all domains in one transaction: %+v", msgs)
	}
	checkReceived(t, msgs[0].Data)

	bad, _ := NewRelay(fmt.Sprintf("smtp://user:wrong@localhost:%d", sink.Port()), RelayOptions{TLSConfig: &tls.Config{RootCAs: roots}})
	if _, err := bad.Send(context.Background(), env, signedSample(t)); err == nil || !IsTemporary(err) {
		t.Fatalf("wrong password: %v", err)
	}
	untrusted, _ := NewRelay(fmt.Sprintf("smtp://user:p%%40ss@localhost:%d", sink.Port()), RelayOptions{})
	if _, err := untrusted.Send(context.Background(), env, signedSample(t)); err == nil {
		t.Fatal("relay accepted a self-signed certificate without RootCAs")
	}
}

func TestRelayImplicitTLS(t *testing.T) {
	t.Parallel()
	srvTLS, roots := smtpsink.SelfSigned(t)
	sink := smtpsink.Start(t, smtpsink.WithImplicitTLS(srvTLS))
	tr, err := NewRelay("smtps://"+sink.Addr(), RelayOptions{TLSConfig: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Send(context.Background(), Envelope{From: "a@b.test", To: []string{"c@d.test"}}, []byte("\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	if sink.Count() != 1 {
		t.Fatal("not received")
	}
}

func TestNewRelayRejects(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://x", "smtp://", "::"} {
		if _, err := NewRelay(u, RelayOptions{}); err == nil {
			t.Errorf("accepted %q", u)
		}
	}
}

func TestRelayConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	tr, _ := NewRelay("smtp://"+addr, RelayOptions{})
	res, err := tr.Send(context.Background(), Envelope{From: "a@b.test", To: []string{"c@d.test"}}, []byte("x"))
	var se *SendError
	if !errors.As(err, &se) || !se.Temporary || len(res.Rcpts) != 1 || res.Rcpts[0].OK {
		t.Fatalf("%v %+v", err, res)
	}
}

// TestPoolConcurrency pushes many messages through a small pool: every one
// arrives, and reuse keeps the number of sessions near the cap.
func TestPoolConcurrency(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	sink := smtpsink.Start(t)
	tr := NewMX(loopResolver{}, MXOptions{Port: sink.Port(), MaxConnsPerHost: 4})
	t.Cleanup(func() { _ = tr.Close() })
	const n = 2000
	data := []byte("Subject: load\r\n\r\nbody\r\n")
	var wg sync.WaitGroup
	var failures []error
	start := time.Now()
	for i := range 32 {
		wg.Go(func() {
			for j := i; j < n; j += 32 {
				_, err := tr.Send(context.Background(), Envelope{From: "a@b.test", To: []string{fmt.Sprintf("u%d@dest.test", j)}}, data)
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first %v", len(failures), failures[0])
	}
	if got := len(sink.WaitFor(n, 5*time.Second)); got != n {
		t.Fatalf("sink got %d of %d", got, n)
	}
	t.Logf("%d messages in %v (%.0f/s)", n, time.Since(start), n/time.Since(start).Seconds())
}

func TestSendCancelled(t *testing.T) {
	t.Parallel()
	sink := smtpsink.Start(t)
	tr := NewMX(loopResolver{}, MXOptions{Port: sink.Port()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Send(ctx, Envelope{From: "a@b.test", To: []string{"c@d.test"}}, []byte("x")); err == nil || !IsTemporary(err) {
		t.Fatalf("%v", err)
	}
}

// TestRelayThatHangsAfterData (#39 item 5): a relay that never answers the
// message is cut off by the command timeout, and the result says where it
// hung (data, not connect) and that it was a timeout.
func TestRelayThatHangsAfterData(t *testing.T) {
	hang := smtpsink.StartHanging(t, "127.0.0.1:0")
	tr, err := NewRelay("smtp://"+hang.Addr(), RelayOptions{CommandTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	began := time.Now()
	res, err := tr.Send(context.Background(), Envelope{From: "a@example.com", To: []string{"b@example.org"}}, []byte("Subject: x\r\n\r\nhi\r\n"))
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("cut off after %v", took)
	}
	if err == nil || res == nil || len(res.Rcpts) != 1 {
		t.Fatalf("send: %v %+v", err, res)
	}
	if r := res.Rcpts[0]; r.Stage != StageData || !r.Timeout || !r.Temporary || r.OK {
		t.Fatalf("result %+v, want a temporary timeout at data", r)
	}
}
