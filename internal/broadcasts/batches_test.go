package broadcasts_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/broadcasts"
	"mailroom/internal/store"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
)

// TestFanOutBatchesResumeAfterTheLast: a fan-out of several batches reads
// each one after the last contact of the one before, and reaches every
// recipient once; a run again (as after a crash) starts over at the first
// recipient still pending, wherever the pending ones are, and sends to
// those alone.
func TestFanOutBatchesResumeAfterTheLast(t *testing.T) {
	const n = 2*broadcasts.BatchSize + 37
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, n)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud,
		"subject": "Hi {{ first_name }}", "text": "Hello"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	sent := func() bool {
		r := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)
		return r["status"] == "sent"
	}
	testapp.Eventually(t, 60*time.Second, sent, "the broadcast was never sent")
	seen := map[string]int{}
	for _, m := range sink.Messages() {
		for _, to := range m.To {
			seen[strings.ToLower(to)]++
		}
	}
	for i := range n {
		if c := seen[fmt.Sprintf("m%05d@example.net", i)]; c != 1 {
			t.Fatalf("m%05d got %d messages, want 1", i, c)
		}
	}

	// Pending again: the first recipient, two in the middle of different
	// batches, and the last.
	again := []int{0, broadcasts.BatchSize - 1, broadcasts.BatchSize + 50, n - 1}
	var addrs []string
	for _, i := range again {
		addrs = append(addrs, fmt.Sprintf("'m%05d@example.net'", i))
	}
	before := sink.Count()
	rerunAfterCrash(t, a, bc, `email IN (`+strings.Join(addrs, ",")+`)`)
	testapp.Eventually(t, 20*time.Second, func() bool { return sink.Count() >= before+len(again) }, "the rerun did not reach every pending recipient")
	time.Sleep(200 * time.Millisecond) // nothing more arrives
	var got []string
	for _, m := range sink.Messages()[before:] {
		got = append(got, strings.ToLower(strings.Join(m.To, ",")))
	}
	if strings.Join(got, " ") == "" || len(got) != len(again) {
		t.Fatalf("the rerun sent to %v, want the %d pending ones %v", got, len(again), addrs)
	}
	want := map[string]bool{}
	for _, a := range addrs {
		want[strings.Trim(a, "'")] = true
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("the rerun sent to %s, which was not pending (sent to %v)", g, got)
		}
	}
}

// TestPendingBatchSeeksPastHandedOver: on SQLite the batch read seeks on
// the primary key to the contact after the last batch's, rather than
// stepping over every recipient already handed over (a cost that grew
// with the square of the broadcast's size).
func TestPendingBatchSeeksPastHandedOver(t *testing.T) {
	a := testapp.Start(t)
	if a.DB.Dialect != store.SQLite {
		t.Skip("SQLite's plan")
	}
	all := testdb.QueryPlan(t, a.DB.R, broadcasts.PendingBatchSQL, "bc_x", "ct_x", 100)
	if !strings.Contains(all, "contact_id>?") || strings.Contains(all, "TEMP B-TREE") {
		t.Errorf("the batch read does not seek past the last batch:\n%s", all)
	}
}

// rerunAfterCrash leaves broadcast bc as a crash mid-fan-out would (sending,
// the recipients matching where not yet handed over) and runs its fan-out
// again.
func rerunAfterCrash(t *testing.T, a *testapp.App, bc, where string) {
	t.Helper()
	ctx := t.Context()
	if _, err := a.DB.W.ExecContext(ctx, `UPDATE broadcast_recipients SET status = 'pending', email_id = ''
		WHERE broadcast_id = '`+bc+`' AND `+where); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DB.W.ExecContext(ctx, `UPDATE broadcasts SET status = 'sending', finished_at = NULL WHERE id = '`+bc+`'`); err != nil {
		t.Fatal(err)
	}
	if err := a.Broadcasts().FanOut(ctx, a.WorkspaceID, bc); err != nil {
		t.Fatal(err)
	}
}
