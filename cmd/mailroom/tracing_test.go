package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/tracing"
)

// otlpReceiver is an OTLP/HTTP trace endpoint: it keeps every span posted.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (o *otlpReceiver) named(name string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTracePerEmail (#48 item 1): with OTEL_EXPORTER_OTLP_ENDPOINT set, the
// real binary exports one trace per email to an OTLP receiver: the accept
// (linked to the API request's trace, which continues the caller's
// traceparent) with its validate, policy and commit steps, the delivery
// with its queue wait, build and SMTP attempt, and the webhook delivery of
// its events — all in the trace whose id the email's id gives.
func TestTracePerEmail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	sink := smtpsink.Start(t)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer hooks.Close()
	n := binary.Start(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "MAILROOM_OUTBOUND=smtp://"+sink.Addr(),
		"MAILROOM_WEBHOOK_ALLOW_PRIVATE=true", "MAILROOM_OUTBOUND_ALLOW_PRIVATE=true")
	key := n.Workspace("Traced", "owner@example.com")
	n.Call(key, "POST", "/v1/webhooks", map[string]any{"url": hooks.URL, "events": []string{"email.delivered"}})

	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", "http://"+n.Addr+"/v1/emails", strings.NewReader(
		`{"from":"onboarding@mailroom.test","to":"owner@example.com","subject":"Traced","text":"hello"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+caller+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("send: %v %v", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := strings.Split(strings.Split(string(body), `"id":"`)[1], `"`)[0]
	sink.WaitFor(1, 20*time.Second)

	want := []string{"email.accept", "validate", "policy", "commit", "email.deliver", "queue.wait", "build", "sign", "smtp.attempt", "webhook.delivery"}
	traceID, rootID := tracing.EmailIDs(id)
	inEmail := func(name string) *tracepb.Span {
		for _, s := range rcv.named(name) {
			if hex.EncodeToString(s.TraceId) == traceID.String() {
				return s
			}
		}
		return nil
	}
	testapp.Eventually(t, 20*time.Second, func() bool {
		for _, name := range want {
			if inEmail(name) == nil {
				return false
			}
		}
		return true
	}, "spans of the email's trace missing; have %d spans", len(rcv.named("email.accept")))

	root := inEmail("email.accept")
	if hex.EncodeToString(root.SpanId) != rootID.String() || len(root.ParentSpanId) != 0 {
		t.Fatalf("root span %x (parent %x), want %s", root.SpanId, root.ParentSpanId, rootID)
	}
	if len(root.Links) != 1 || hex.EncodeToString(root.Links[0].TraceId) != caller {
		t.Fatalf("accept not linked to the request's trace %s: %v", caller, root.Links)
	}
	var api *tracepb.Span
	for _, s := range rcv.named("POST /v1/emails") {
		if hex.EncodeToString(s.TraceId) == caller {
			api = s
		}
	}
	if api == nil || hex.EncodeToString(root.Links[0].SpanId) != hex.EncodeToString(api.SpanId) {
		t.Fatalf("the API request's span (continuing the caller's traceparent) is not the linked one: %v", api)
	}
	for _, name := range []string{"validate", "policy", "commit", "email.deliver", "webhook.delivery"} {
		if s := inEmail(name); hex.EncodeToString(s.ParentSpanId) != rootID.String() {
			t.Errorf("%s's parent is %x, want the email's root %s", name, s.ParentSpanId, rootID)
		}
	}
	deliver := inEmail("email.deliver")
	for _, name := range []string{"queue.wait", "build", "sign", "smtp.attempt"} {
		if s := inEmail(name); string(s.ParentSpanId) != string(deliver.SpanId) {
			t.Errorf("%s is not under email.deliver", name)
		}
	}
	if ev := inEmail("smtp.attempt").Events; len(ev) != 1 || ev[0].Name != "reply" {
		t.Errorf("attempt events %v", ev)
	}
}
