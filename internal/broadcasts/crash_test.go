package broadcasts_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/wait"
)

// TestCrashMidFanOut runs the real binary, kills it with SIGKILL while a
// broadcast of 3,000 fans out and is delivered, starts it again, and
// checks that every recipient got the broadcast at least once, and that
// repeats stay within what was in flight at the kill (one batch).
func TestCrashMidFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const n = 2000
	sink := smtpsink.Start(t, smtpsink.WithHandler(func(string, []string, []byte) error {
		time.Sleep(time.Millisecond) // a receiving server takes a moment
		return nil
	}))
	node := binary.Start(t,
		"MAILROOM_OUTBOUND=smtp://"+sink.Addr(),
		"MAILROOM_JOB_RESCUE_AFTER=60s", // a marketing batch of 100 may take longer than the 3 s other crash tests use
		"MAILROOM_NODE_TIMEOUT=2s",      // the restarted node takes up the killed one's running jobs within seconds
	)
	key := node.Workspace("Crash", "owner@example.com")
	call := func(method, path string, body any) map[string]any {
		t.Helper()
		return node.Call(key, method, path, body)
	}
	aud := call("POST", "/v1/audiences", map[string]any{"name": "Everyone"})["id"].(string)
	var rows []any
	for i := range n {
		rows = append(rows, map[string]any{"email": fmt.Sprintf("r%05d@example.net", i), "attributes": map[string]any{"first_name": fmt.Sprint("R", i)}})
	}
	call("POST", "/v1/audiences/"+aud+"/contacts", rows)
	bc := call("POST", "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Hello {{ first_name }}", "html": "<p>Hi {{ first_name }}</p>"})["id"].(string)
	call("POST", "/v1/broadcasts/"+bc+"/send", nil)

	sink.WaitFor(n/3, 30*time.Second) // the sink signals each message
	node.Kill()
	atKill := sink.Count()
	if atKill >= n {
		t.Fatal("everything was delivered before the kill; the test proves nothing")
	}

	node.Restart()
	defer node.Stop()
	var b map[string]any
	wait.Until(90*time.Second, func() bool {
		b = call("GET", "/v1/broadcasts/"+bc, nil)
		st := b["stats"].(map[string]any)
		return b["status"] == "sent" && st["pending"] == float64(0) && st["sent"] == float64(0)
	})
	seen := map[string]int{}
	for _, m := range sink.Messages() {
		for _, to := range m.To {
			seen[strings.ToLower(to)]++
		}
	}
	missing, dups := 0, 0
	for i := range n {
		switch c := seen[fmt.Sprintf("r%05d@example.net", i)]; {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("killed with %d of %d at the sink; after the restart: %d messages, %d repeats, %d missing; broadcast %v %v",
		atKill, n, sink.Count(), dups, missing, b["status"], b["stats"])
	if missing > 0 {
		t.Errorf("%d recipients never got the broadcast\n%s", missing, node.Logs.String())
	}
	if dups > 100 {
		t.Errorf("%d repeats: more than the one batch in flight at the kill", dups)
	}
	if st := b["stats"].(map[string]any); b["status"] != "sent" || st["delivered"] != float64(n) {
		t.Errorf("broadcast ended %v with stats %v", b["status"], st)
	}
}
