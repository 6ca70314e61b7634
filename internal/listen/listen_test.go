package listen_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/listen"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/webhooks"
)

// forwarded is one request the receiver got, checked with the webhooks
// package's own verifier.
type forwarded struct {
	event, id string
	verr      error
	svix      bool // the Svix-style headers are there too
}

// syncBuffer is listen's output, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestListenForwardsSignedEvents (issue #48 item 5): mailroom listen posts
// each event of the stream to --forward-to, signed as a delivery is (the
// receiver verifies with webhooks.Verify and finds the Svix headers),
// prints a line per event, honours --events, and after a dropped
// connection resumes with Last-Event-ID: nothing twice, nothing lost.
func TestListenForwardsSignedEvents(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	secret := webhooks.NewSecret()
	got := make(chan forwarded, 100)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- forwarded{
			event: r.Header.Get(webhooks.HeaderEvent), id: r.Header.Get(webhooks.HeaderDeliveryID),
			verr: webhooks.Verify(r.Header.Get(webhooks.HeaderSignature), body, secret, time.Now(), webhooks.SignatureTolerance),
			svix: r.Header.Get("Svix-Signature") != "" && r.Header.Get("Webhook-Id") == r.Header.Get(webhooks.HeaderDeliveryID),
		}
		w.WriteHeader(204)
	}))
	defer recv.Close()

	// The stream's connections, so the test can cut them.
	var mu sync.Mutex
	var conns []net.Conn
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}}}
	connected := make(chan struct{}, 10)
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- listen.Run(ctx, listen.Options{APIURL: a.URL, APIKey: a.Key, ForwardTo: recv.URL + "/webhooks", Secret: secret,
			Types: []string{"email.delivered", "email.bounced"}, Out: out, Stream: client, Connected: func() { connected <- struct{}{} }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listen: %v", err)
		}
	}()
	wait := func() forwarded {
		t.Helper()
		select {
		case f := <-got:
			return f
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing forwarded; listen printed:\n%s", out.String())
		}
		return forwarded{}
	}
	<-connected
	testapp.Eventually(t, 5*time.Second, func() bool { return a.Webhooks().OpenStreams(a.WorkspaceID) == 1 }, "no stream open")

	a.RaiseEmailEvent(t, a.WorkspaceID, events.EmailSent, "em_1") // not asked for
	first := a.RaiseEmailEvent(t, a.WorkspaceID, events.EmailDelivered, "em_1")
	if f := wait(); f.id != first || f.event != "email.delivered" || f.verr != nil || !f.svix {
		t.Fatalf("forwarded %+v, want %s verified", f, first)
	}
	testapp.Eventually(t, 5*time.Second, func() bool { return strings.Contains(out.String(), "email.delivered "+first+" 204") }, "no line for the event:\n%s", out.String())

	// Cut the stream: listen reconnects with Last-Event-ID and forwards
	// what came meanwhile, once.
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	second := a.RaiseEmailEvent(t, a.WorkspaceID, events.EmailBounced, "em_2")
	<-connected
	if f := wait(); f.id != second || f.verr != nil {
		t.Fatalf("after the reconnect forwarded %+v, want %s", f, second)
	}
	third := a.RaiseEmailEvent(t, a.WorkspaceID, events.EmailDelivered, "em_3")
	if f := wait(); f.id != third {
		t.Fatalf("forwarded %+v, want %s (and %s only once)", f, third, second)
	}
}

// TestListenRefusesABadKey: a key the server refuses ends listen with the
// server's answer instead of reconnecting for ever.
func TestListenRefusesABadKey(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	err := listen.Run(context.Background(), listen.Options{APIURL: a.URL, APIKey: "re_nope", ForwardTo: "http://127.0.0.1:1/"})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("listen with a bad key: %v", err)
	}
}

// TestListenRefusesASecretNoVerifierReads: a --secret that is not whsec_
// and base64 (as Svix's and the Resend SDKs' verifiers decode it) is
// refused at start, before anything is forwarded unverifiable.
func TestListenRefusesASecretNoVerifierReads(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"whsec_Jg/e6zzeURR6ADJ9cA7qCbBCOtYWIkV", "hunter2", "whsec_"} {
		err := listen.Run(context.Background(), listen.Options{APIURL: "http://127.0.0.1:1", APIKey: "mr_x", ForwardTo: "http://127.0.0.1:1/", Secret: s})
		if err == nil || !strings.Contains(err.Error(), "--secret") {
			t.Errorf("secret %q: %v", s, err)
		}
	}
}
