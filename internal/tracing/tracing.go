// Package tracing gives each email one OpenTelemetry trace (#48 item 1),
// exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and costs a no-op otherwise.
//
// An email's trace id and its root span id are derived from the email's id,
// so every stage — the accepting request, the delivery job on any node, each
// webhook delivery of its events — joins the same trace without storing a
// trace context anywhere. The API request that accepted it has its own
// trace (continued from the caller's traceparent) and is linked.
package tracing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// current is the tracer of the provider installed last; nil until a span
// or an install asks (otel.Tracer takes a lock and a map lookup: ~1% of a
// broadcast's CPU when asked for each span).
var current atomic.Pointer[trace.Tracer]

// tracer is the one tracer; until Setup installs a provider it is otel's
// global delegate, a no-op whose spans cost a few allocations at most.
func tracer() trace.Tracer {
	if t := current.Load(); t != nil {
		return *t
	}
	t := otel.Tracer("mailroom") // follows the first provider installed
	current.CompareAndSwap(nil, &t)
	return t
}

// use installs tp as the global provider and its tracer as the one tracer.
func use(tp *sdktrace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t := tp.Tracer("mailroom")
	current.Store(&t)
}

// Enabled says whether OTEL_EXPORTER_OTLP_ENDPOINT asks for traces.
func Enabled(getenv func(string) string) bool {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the OTLP/HTTP exporter (configured by the standard OTEL_*
// variables) as the global tracer provider when Enabled; the returned
// function flushes and stops it.
func Setup(ctx context.Context, version string) (func(context.Context) error, error) {
	if !Enabled(os.Getenv) {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(semconv.ServiceName("mailroom"), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res), sdktrace.WithIDGenerator(ids{}))
	use(tp)
	return tp.Shutdown, nil
}

// Install sets tp as the provider (tests, with their own exporter).
func Install(tp *sdktrace.TracerProvider) { use(tp) }

// IDGenerator is the generator Setup uses; tests building their own
// provider pass it too.
func IDGenerator() sdktrace.IDGenerator { return ids{} }

// EmailIDs are the trace id and the root span id of an email's trace.
func EmailIDs(emailID string) (trace.TraceID, trace.SpanID) {
	sum := sha256.Sum256([]byte("mailroom email trace\x00" + emailID))
	var t trace.TraceID
	var s trace.SpanID
	copy(t[:], sum[:16])
	copy(s[:], sum[16:24])
	return t, s
}

// InEmail is ctx with the email's root span as the remote parent: spans
// started from it join the email's trace on any node.
func InEmail(ctx context.Context, emailID string) context.Context {
	t, s := EmailIDs(emailID)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

type rootKey struct{}

// ids generates random ids, except for an email's root span, whose ids
// come from the email id (rootKey in the context).
type ids struct{}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if id, ok := ctx.Value(rootKey{}).(string); ok {
		return EmailIDs(id)
	}
	var t trace.TraceID
	_, _ = rand.Read(t[:])
	return t, newSpanID()
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if id, ok := ctx.Value(rootKey{}).(string); ok {
		_, s := EmailIDs(id)
		return s
	}
	return newSpanID()
}

func newSpanID() trace.SpanID {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if binary.BigEndian.Uint64(b[:]) == 0 {
		b[7] = 1
	}
	return trace.SpanID(b)
}

// Step is a finished stage with its times, for spans written after the
// fact (the accept path learns the email's id only once it is built).
type Step struct {
	Name       string
	Start, End time.Time
}

// Accepted writes an email's root span (the accept, from start to the
// commit's answer) linked to the API request's span in request, with the
// steps as its children.
func Accepted(request context.Context, emailID, workspaceID string, start, end time.Time, steps ...Step) {
	if !sdkInstalled() {
		return
	}
	ctx := context.WithValue(context.Background(), rootKey{}, emailID)
	ctx, root := tracer().Start(ctx, "email.accept", trace.WithTimestamp(start), trace.WithNewRoot(),
		trace.WithLinks(trace.LinkFromContext(request, attribute.String("link", "api request"))),
		trace.WithAttributes(attribute.String("mailroom.email_id", emailID), attribute.String("mailroom.workspace_id", workspaceID)))
	for _, st := range steps {
		if st.Start.IsZero() {
			continue
		}
		_, sp := tracer().Start(context.WithValue(ctx, rootKey{}, nil), st.Name, trace.WithTimestamp(st.Start))
		sp.End(trace.WithTimestamp(st.End))
	}
	root.End(trace.WithTimestamp(end))
}

// On says whether traces are exported (work that only feeds a span can be
// skipped otherwise).
func On() bool { return sdkInstalled() }

// sdkInstalled says whether a real provider is in place.
func sdkInstalled() bool {
	_, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	return ok
}

// Start starts a span under ctx's.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// Server starts the span of an API request, continuing the caller's
// traceparent from carrier.
func Server(ctx context.Context, carrier propagation.TextMapCarrier, name string) (context.Context, trace.Span) {
	ctx = otel.GetTextMapPropagator().Extract(ctx, carrier)
	return tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}

// Span writes a finished span under ctx's (a stage timed before its span
// could be started, such as the wait in the queue).
func Span(ctx context.Context, name string, start, end time.Time, attrs ...attribute.KeyValue) {
	_, sp := tracer().Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	sp.End(trace.WithTimestamp(end))
}

// Fail marks span failed with err.
func Fail(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
