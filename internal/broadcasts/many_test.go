package broadcasts_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestManyBroadcastsAtOnce: more broadcasts sending at once than the node
// has fan-out workers all finish. A fan-out waits for its emails' delivery,
// so deliveries must never wait behind fan-outs for a worker.
func TestManyBroadcastsAtOnce(t *testing.T) {
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
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
