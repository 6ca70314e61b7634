package broadcasts_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/broadcasts"
	"mailroom/internal/jobs"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestManyBroadcastsAtOnce: more broadcasts sending at once than the node
// has fan-out workers all finish. A fan-out waits for its emails' delivery,
// so deliveries must never wait behind fan-outs for a worker.
func TestManyBroadcastsAtOnce(t *testing.T) {
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()), testapp.WithEnv("MAILROOM_RATE_LIMIT", "100000"))
	aud := audience(t, a, 3)
	var ids []string
	for i := range 12 {
		id := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud,
			"subject": fmt.Sprint("Issue ", i), "text": "Hello"}), 201)["id"].(string)
		ids = append(ids, id)
	}
	for _, id := range ids {
		mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/send", nil), 200)
	}
	testapp.Eventually(t, 30*time.Second, func() bool {
		for _, id := range ids {
			if mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+id, nil), 200)["status"] != "sent" {
				return false
			}
		}
		return true
	}, "not every broadcast was sent")
	if got := len(sink.Messages()); got != 12*3 {
		t.Fatalf("%d messages at the sink, want %d", got, 12*3)
	}
}

// TestFanOutKeepsPace: while delivery is held up, the fan-out stops a few
// batches ahead of it (BatchesAhead waiting, plus those the marketing
// workers hold) instead of handing the whole audience over; once delivery
// moves, every member gets the broadcast.
func TestFanOutKeepsPace(t *testing.T) {
	gate := make(chan struct{})
	sink := smtpsink.Start(t, smtpsink.WithHandler(func(string, []string, []byte) error { <-gate; return nil }))
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()), testapp.WithEnv("MAILROOM_RATE_LIMIT", "100000"))
	const members = 1500
	aud := audience(t, a, members)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "S", "text": "T"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 20*time.Second, func() bool {
		n, err := jobs.Waiting(t.Context(), a.DB, jobs.QueueMarketing, jobs.MarketingBatchArgs{}.Kind())
		return err == nil && n >= broadcasts.BatchesAhead
	}, "the marketing lane never had batches waiting")
	// The marketing workers (8) each hold a batch, BatchesAhead more wait,
	// one more may be on its way: the rest stays pending.
	most := (8 + broadcasts.BatchesAhead + 1) * broadcasts.BatchSize
	for range 10 {
		st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
		if pending := st["pending"].(float64); pending < members-float64(most) {
			close(gate)
			t.Fatalf("%v of %d members handed over while delivery was held (at most %d expected)", members-pending, members, most)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(gate)
	testapp.Eventually(t, 60*time.Second, func() bool {
		return mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["status"] == "sent"
	}, "the broadcast never finished")
	if got := len(sink.Messages()); got != members {
		t.Fatalf("%d messages at the sink, want %d", got, members)
	}
}
