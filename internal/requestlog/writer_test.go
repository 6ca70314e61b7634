package requestlog

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/ids"
	"mailroom/internal/testkit/testdb"
)

// TestRecordDropsWhenFull: a full buffer drops and counts, without waiting
// on the writer; once started, the writer inserts what was queued.
func TestRecordDropsWhenFull(t *testing.T) {
	db := testdb.Open(t)
	reg := prometheus.NewRegistry()
	w := NewWriter(db, reg, slog.New(slog.DiscardHandler))
	start := time.Now()
	for range Buffer + 7 {
		w.Record(Entry{WorkspaceID: "ws_full", APIKeyID: "key_1", Method: "GET", Path: "/v1/x", Status: 200, RequestID: "req_1", At: start})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("recording took %v", d)
	}
	if got := dropped(t, reg); got != 7 {
		t.Fatalf("dropped %v, want 7", got)
	}
	w.Start(context.Background())
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := list(context.Background(), db, "ws_full", filter{from: ids.Floor(idPrefix, start), to: ids.Floor(idPrefix, start.Add(time.Second)), limit: Buffer + 10})
	if err != nil || len(rows) != Buffer {
		t.Fatalf("%d rows written, want %d (%v)", len(rows), Buffer, err)
	}
	w.Stop(context.Background()) // a second stop does nothing
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "/v1/emails",
		"limit=5":                         "/v1/emails?limit=5",
		"token=abc&limit=5":               "/v1/emails?token=REDACTED&limit=5",
		"api_key=a&X-Signature=b&after=c": "/v1/emails?api_key=REDACTED&X-Signature=REDACTED&after=c",
		"access%5Ftoken=z":                "/v1/emails?access%5Ftoken=REDACTED",
		"flag":                            "/v1/emails?flag",
	} {
		if got := Redact("/v1/emails", in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Redact("/v1/"+strings.Repeat("é", 600), ""); len(got) > maxPath || !strings.HasSuffix(got, "é") {
		t.Errorf("a long path is cut to %d bytes, ending %q", len(got), got[len(got)-2:])
	}
}

// dropped reads mailroom_request_log_dropped_total from reg.
func dropped(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "mailroom_request_log_dropped_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no mailroom_request_log_dropped_total")
	return 0
}
