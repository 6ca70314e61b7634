package sending_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/outbound"
	"mailroom/internal/testkit/testapp"
)

// TestMessageIDNotStored (#47): an email whose Message-ID is the one
// derived from its id and From stores none (emails.message_id is ""), and
// every read answers as it did when the column held it: the email, the
// list, and the delivery engine's read (bounce matching compares it).
func TestMessageIDNotStored(t *testing.T) {
	a := testapp.Start(t)
	ctx := context.Background()
	for _, from := range []string{sandbox, `"Acme News" <onboarding@MAILROOM.test>`} {
		id := send(t, a, msg("from", from))
		waitStatus(t, a, id, "delivered", 10*time.Second)
		var stored string
		if err := a.DB.QueryRow(ctx, `SELECT message_id FROM emails WHERE id = ?`, id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored != "" {
			t.Errorf("%s: stored message_id %q, want none", from, stored)
		}
		reads := func() (one, list string) {
			one = string(a.Do(http.MethodGet, "/v1/emails/"+id, nil).Body)
			list = string(a.Do(http.MethodGet, "/v1/emails?limit=5", nil).Body)
			return one, list
		}
		one, list := reads()
		want := outbound.MessageIDFor(id, "mailroom.test")
		if got := getEmail(t, a, id)["message_id"]; got != want {
			t.Errorf("%s: message_id %v, want %s", from, got, want)
		}
		// Stored in full, as before the cut: the same answers.
		if _, err := a.DB.Exec(ctx, `UPDATE emails SET message_id = ? WHERE id = ?`, want, id); err != nil {
			t.Fatal(err)
		}
		fullOne, fullList := reads()
		if one != fullOne || list != fullList {
			t.Errorf("%s: reads differ from a row storing its Message-ID:\n%s\n%s\n---\n%s\n%s", from, one, list, fullOne, fullList)
		}
	}
}
