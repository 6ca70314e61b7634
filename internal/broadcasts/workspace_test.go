package broadcasts_test

import (
	"net/http"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestRecipientRowsOfTheirWorkspace (#47, 00122): a recipient row keeps no
// workspace of its own; its broadcast's still scopes it, so another
// workspace naming the row renders nothing.
func TestRecipientRowsOfTheirWorkspace(t *testing.T) {
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
	aud := audience(t, a, 1)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "For {{ first_name }}",
		"html": `<p>Hi {{ first_name }}</p>`}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 30*time.Second, func() bool { return sink.Count() == 1 }, "the broadcast did not reach its member")
	var src string
	if err := a.DB.QueryRow(t.Context(), `SELECT COALESCE(s.source_prefix, '') || e.body_source FROM emails e
		LEFT JOIN email_shared s ON s.id = e.shared_id WHERE e.body_source <> ''`).Scan(&src); err != nil {
		t.Fatal(err)
	}
	for ws, found := range map[string]bool{a.WorkspaceID: true, "ws_other": false} {
		bodies, err := a.Broadcasts().Bodies(t.Context(), ws, []string{src})
		if err != nil {
			t.Fatal(err)
		}
		b, err := bodies[src](t.Context(), time.Now())
		if got := err == nil && b.HTML != ""; got != found {
			t.Errorf("workspace %s: body rendered %v (%v), want %v", ws, got, err, found)
		}
	}
}
