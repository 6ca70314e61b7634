package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/wait"
)

// t0 is where fake clocks start.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// hit is one request a receiver got.
type hit struct {
	header   http.Header
	body     []byte
	envelope struct {
		ID        string          `json:"id"`
		Event     string          `json:"event"`
		Timestamp string          `json:"timestamp"`
		Sequence  int             `json:"sequence"`
		Data      json.RawMessage `json:"data"`
	}
	at       time.Time // the node's clock when it arrived
	real     time.Time // the wall clock when it arrived
	verified []string  // the secrets whose v1 matched
	ts       int64     // t= of the signature
}

// receiver is a real HTTP endpoint on 127.0.0.1 that checks signatures
// with its own HMAC code (not the package's) and answers as told.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	clock   clock.Clock
	mu      sync.Mutex
	hits    []hit
	secrets []string
	// answer decides the reply to the n-th request (from 1).
	answer func(n int, w http.ResponseWriter)
}

func newReceiver(t *testing.T, c clock.Clock) *receiver {
	rc := &receiver{t: t, clock: c, answer: func(int, http.ResponseWriter) {}}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc.srv.Listener = ln
	rc.srv.Start()
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hooks" }

func (rc *receiver) setSecrets(s ...string) {
	rc.mu.Lock()
	rc.secrets = s
	rc.mu.Unlock()
}

func (rc *receiver) setAnswer(f func(n int, w http.ResponseWriter)) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := hit{header: r.Header.Clone(), body: body, at: rc.clock.Now(), real: time.Now()}
	_ = json.Unmarshal(body, &h.envelope)
	rc.mu.Lock()
	secrets := rc.secrets
	var v1s []string
	for _, part := range strings.Split(r.Header.Get("X-Svc-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			h.ts, _ = strconv.ParseInt(v, 10, 64)
		case "v1":
			v1s = append(v1s, v)
		}
	}
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		fmt.Fprintf(m, "%d.", h.ts)
		m.Write(body)
		want := hex.EncodeToString(m.Sum(nil))
		for _, v := range v1s {
			if hmac.Equal([]byte(v), []byte(want)) {
				h.verified = append(h.verified, s)
			}
		}
	}
	rc.hits = append(rc.hits, h)
	n := len(rc.hits)
	answer := rc.answer
	rc.mu.Unlock()
	answer(n, w)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

func (rc *receiver) all() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func (rc *receiver) waitCount(n int, within time.Duration) []hit {
	rc.t.Helper()
	testapp.Eventually(rc.t, within, func() bool { return rc.count() >= n }, "receiver got %d requests, want %d", rc.count(), n)
	return rc.all()
}

// node is a test node on a fake clock.
type node struct {
	*testapp.App
	clock *clock.Fake
}

func startNode(t *testing.T, opts ...testapp.Option) *node {
	fake := clock.NewFake(t0)
	a := testapp.Start(t, append([]testapp.Option{testapp.WithClock(fake)}, opts...)...)
	return &node{App: a, clock: fake}
}

// advance moves the node's clock and makes its loops look at once.
func (n *node) advance(d time.Duration) {
	n.clock.Advance(d)
	n.Webhooks().Kick()
}

// quiet waits until the node has nothing left to deliver (settle), then
// checks rc got have requests and nothing else.
func (n *node) quiet(t *testing.T, rc *receiver, have int) {
	t.Helper()
	n.settle(t)
	if got := rc.count(); got != have {
		t.Fatalf("receiver got %d requests, want %d and nothing else", got, have)
	}
}

// settle waits until every event is fanned out and then a claim that began
// after that leased nothing with nothing in flight: every delivery due on
// the node's clock has been made, and no other is.
func (n *node) settle(t *testing.T) {
	t.Helper()
	wait.For(t, 10*time.Second, func() bool {
		var left int
		if err := n.DB.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE dispatched = 0`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0
	}, "events still not fanned out")
	claimed := n.Webhooks().TestSignals.Claimed.Init()
	claimed.Drain()
	n.Webhooks().Kick()
	claimed.Wait(t) // it may have begun before the kick; the next did not
	for range 100 {
		n.Webhooks().Kick()
		if c := claimed.Wait(t); c.Leased == 0 && c.Held == 0 {
			return
		}
	}
	t.Fatal("the delivery pool never ran out of work")
}

// register creates an endpoint and tells the receiver its secret.
func (n *node) register(t *testing.T, rc *receiver, body map[string]any) map[string]any {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["url"] = rc.URL()
	r := n.Do("POST", "/v1/webhooks", body)
	if r.Status != 201 {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	m := r.JSON()
	rc.setSecrets(m["secret"].(string))
	return m
}

// raise writes events the way other areas do: events.Raise in a
// transaction.
func (n *node) raise(t *testing.T, ws, kind string, count int) []string {
	t.Helper()
	var out []string
	err := n.DB.InTx(context.Background(), func(tx *store.Tx) error {
		for i := range count {
			ev, err := events.Raise(context.Background(), tx, events.Event{
				WorkspaceID: ws, EmailID: fmt.Sprintf("em_%d", i), Type: kind, CreatedAt: n.clock.Now(),
				Data: map[string]any{"email_id": fmt.Sprintf("em_%d", i), "to": []string{"a@example.com"}, "subject": "Hi", "tags": map[string]string{"k": "v"}},
			})
			if err != nil {
				return err
			}
			out = append(out, ev.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (n *node) get(t *testing.T, path string) map[string]any {
	t.Helper()
	r := n.Do("GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	return r.JSON()
}

// deliveries reads the whole delivery log of one endpoint, newest first.
func (n *node) deliveries(t *testing.T, webhookID string) []map[string]any {
	t.Helper()
	m := n.get(t, "/v1/webhooks/deliveries?limit=100&webhook_id="+webhookID)
	var out []map[string]any
	for _, d := range m["deliveries"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func (n *node) waitDeliveries(t *testing.T, webhookID string, count int) []map[string]any {
	t.Helper()
	var ds []map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		ds = n.deliveries(t, webhookID)
		return len(ds) >= count
	}, "delivery log has %d rows, want %d", len(ds), count)
	return ds
}

func answerStatus(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}
