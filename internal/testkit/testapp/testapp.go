// Package testapp starts a real Mailroom node in-process for end-to-end
// tests: the same app.New and app.Start the binary uses, on a fresh database
// (SQLite, or PostgreSQL when MAILROOM_TEST_DATABASE_URL is set), listening
// on 127.0.0.1, with a workspace and its API key ready.
package testapp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/openapicheck"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/testkit/testkeys"
	"mailroom/internal/testkit/wait"
)

// App is a running node plus a client for it.
type App struct {
	*app.App
	T           testing.TB
	URL         string // http://127.0.0.1:port
	Key         string // API key of the default workspace (every scope)
	WorkspaceID string
	Env         map[string]string
	Client      *http.Client
	SkipOpenAPI bool // for tests that send deliberately odd requests in bulk
}

// Option adjusts the environment before start.
type Option func(env map[string]string, o *app.Options)

// WithEnv sets a MAILROOM_* variable.
func WithEnv(k, v string) Option {
	return func(env map[string]string, _ *app.Options) { env[k] = v }
}

// WithMX has the node deliver by MX lookup through dns to sink: rcpt.example
// gets an MX record at 127.0.0.1, where sink listens (MAILROOM_SMTP_PORT).
func WithMX(dns *dnstest.Server, sink *smtpsink.Sink) Option {
	dns.AddMX("rcpt.example", "mx.rcpt.example", 10)
	dns.AddA("mx.rcpt.example", "127.0.0.1")
	return func(env map[string]string, _ *app.Options) {
		env["MAILROOM_OUTBOUND"] = "mx"
		env["MAILROOM_DNS_RESOLVER"] = dns.Addr()
		env["MAILROOM_SMTP_PORT"] = strconv.Itoa(sink.Port())
	}
}

// WithClock uses c as the node's clock.
func WithClock(c clock.Clock) Option {
	return func(_ map[string]string, o *app.Options) { o.Clock = c }
}

// WithDatabase points the node at an existing database (e.g. a second node
// sharing the first one's; on SQLite, without the file's lock, which the
// first node holds).
func WithDatabase(url string) Option {
	return func(env map[string]string, o *app.Options) {
		env["MAILROOM_DATABASE_URL"] = url
		o.SharedSQLite = true
	}
}

// Start boots a node and creates a workspace.
func Start(t testing.TB, opts ...Option) *App {
	t.Helper()
	env := map[string]string{
		"MAILROOM_HTTP_ADDR":             "127.0.0.1:0",
		"MAILROOM_SMTP_ADDR":             "off",
		"MAILROOM_SUBMISSION_ADDR":       "off",
		"MAILROOM_SUBMISSION_TLS_ADDR":   "off",
		"MAILROOM_DATABASE_URL":          testdb.URL(t),
		"MAILROOM_SECRET_KEY":            "test-secret-key-0123456789",
		"MAILROOM_SERVICE_DOMAIN":        "mailroom.test",
		"MAILROOM_WEBHOOK_ALLOW_PRIVATE": "true",
		// The sinks and the test DNS server's MX hosts are on 127.0.0.1.
		"MAILROOM_OUTBOUND_ALLOW_PRIVATE": "true",
		"MAILROOM_DATA_DIR":               t.TempDir(),
		// The free-space guard is off unless a test trips it: a CI
		// machine's disk may be nearly full without the suite being wrong.
		"MAILROOM_MIN_FREE_DISK": "0",
		// Tests poll the API (Eventually, every 10 ms): the default 600 a
		// minute answered 429 on a slow machine. Tests of the limiter set
		// their own.
		"MAILROOM_RATE_LIMIT": "100000",
	}
	o := app.Options{DKIMKeys: testkeys.Source()} // DKIM keys made ahead of time: generating them is slow
	for _, f := range opts {
		f(env, &o)
	}
	if o.Logger == nil {
		level := slog.LevelWarn
		if os.Getenv("MAILROOM_TEST_LOG") != "" {
			level = slog.LevelDebug
		}
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
	}
	cfg, err := config.Load(config.Map(env))
	if err != nil {
		t.Fatalf("testapp: config: %v", err)
	}
	ctx := context.Background()
	a, err := app.New(ctx, cfg, o)
	if err != nil {
		t.Fatalf("testapp: %v", err)
	}
	if err := a.Start(ctx); err != nil {
		a.Stop(ctx)
		t.Fatalf("testapp: start: %v", err)
	}
	ta := &App{App: a, T: t, URL: "http://" + a.HTTPAddr(), Env: env, Client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Stop(sctx)
	})
	w, key, err := a.Workspaces.CreateWorkspace(ctx, "Test workspace", "owner@example.com", true)
	if err != nil {
		t.Fatalf("testapp: creating workspace: %v", err)
	}
	ta.Key, ta.WorkspaceID = key, w.ID
	return ta
}

// NewWorkspace creates another workspace and returns its id and key.
func (a *App) NewWorkspace(name, owner string) (string, string) {
	a.T.Helper()
	w, key, err := a.Workspaces.CreateWorkspace(context.Background(), name, owner, true)
	if err != nil {
		a.T.Fatalf("testapp: creating workspace: %v", err)
	}
	return w.ID, key
}

// Response is a decoded reply.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r *Response) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// ErrCode returns the error code of an error answer in either of the
// spec's shapes, { error: { code } } or { error: "<code>" }, and "" when the
// body carries none. ErrFlat tells which shape it was.
func (r *Response) ErrCode() string {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(r.Body, &b) != nil {
		return ""
	}
	var code string
	if json.Unmarshal(b.Error, &code) == nil {
		return code
	}
	var nested struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b.Error, &nested)
	return nested.Code
}

// ErrFlat reports whether the answer is an error in the flat shape
// { error: "<code>", message, hint? }.
func (r *Response) ErrFlat() bool {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	var code string
	return json.Unmarshal(r.Body, &b) == nil && json.Unmarshal(b.Error, &code) == nil && code != ""
}

// For returns a copy of a whose helpers report to t (a subtest), so that
// their failures stop the right goroutine.
func (a *App) For(t testing.TB) *App {
	c := *a
	c.T = t
	return &c
}

// Do calls the API with the default key. body may be nil, a string or []byte
// (sent as is) or any value (sent as JSON).
func (a *App) Do(method, path string, body any) *Response {
	return a.DoKey(a.Key, method, path, body)
}

// DoKey calls the API with the given key ("" sends no Authorization).
func (a *App) DoKey(key, method, path string, body any) *Response {
	a.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			a.T.Fatalf("encoding request: %v", err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		a.T.Fatalf("request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return a.Send(req)
}

// VerifiedDomain adds name to key's workspace, publishes in dns the records
// it lists (those keep accepts, when keep is not nil) and verifies it; it
// returns the domain's id.
func (a *App) VerifiedDomain(key string, dns *dnstest.Server, name string, keep func(dnstest.Record) bool) string {
	a.T.Helper()
	r := a.DoKey(key, "POST", "/v1/domains", map[string]any{"domain": name})
	if r.Status != http.StatusCreated {
		a.T.Fatalf("create domain %s: %d %s", name, r.Status, r.Body)
	}
	var d struct {
		ID      string           `json:"id"`
		Records []dnstest.Record `json:"records"`
	}
	r.Decode(a.T, &d)
	if keep != nil {
		d.Records = slices.DeleteFunc(d.Records, func(rec dnstest.Record) bool { return !keep(rec) })
	}
	dns.Publish(d.Records)
	if r := a.DoKey(key, "POST", "/v1/domains/"+d.ID+"/verify", nil); r.Status != 200 || r.JSON()["verified"] != true {
		a.T.Fatalf("verify %s: %d %s", name, r.Status, r.Body)
	}
	return d.ID
}

// Send performs a prepared request.
func (a *App) Send(req *http.Request) *Response {
	a.T.Helper()
	resp, err := a.Client.Do(req)
	if err != nil {
		a.T.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if !a.SkipOpenAPI {
		openapicheck.Check(a.T, req, out.Status, out.Header, out.Body)
	}
	return out
}

// Eventually polls cond until it holds or the timeout passes (wait.For).
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	wait.For(t, timeout, cond, format, args...)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// RaiseEmailEvent writes one event of kind about emailID in workspace ws,
// as the sending area would (a stream or a replay's input), and returns
// its id.
func (a *App) RaiseEmailEvent(t testing.TB, ws, kind, emailID string) string {
	t.Helper()
	var id string
	err := a.DB.InTx(context.Background(), func(tx *store.Tx) error {
		ev, err := events.Raise(context.Background(), tx, events.Event{WorkspaceID: ws, EmailID: emailID, Type: kind, CreatedAt: time.Now(),
			Data: events.EmailData(emailID, "a@acme.example", []string{"b@rcpt.example"}, "Hi", nil, false)})
		id = ev.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}
