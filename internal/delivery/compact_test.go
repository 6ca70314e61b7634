package delivery_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"mailroom/internal/delivery"
	"mailroom/internal/sending"
)

// TestDeliveredRecipientsCompacted (#47): an email every recipient of
// which was delivered stores their addresses, not their outcomes, and
// every read answers as it did when the outcomes were stored whole: the
// email, its attempts, the list, and the delivery engine's own read.
func TestDeliveredRecipientsCompacted(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	id := b.insert(t, send{From: "News <news@example.com>", To: []string{"ann@example.net", "Bob <bob@example.org>"}, Subject: "Hi", Text: "hello"})
	rebuilt := b.waitStatus(t, id, sending.StatusDelivered).Recipients
	var raw string
	if err := b.a.DB.QueryRow(ctx, `SELECT recipients FROM emails WHERE id = ?`, id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != `["=","ann@example.net","bob@example.org"]` {
		t.Errorf("stored recipients %s, want the delivered mark and the addresses", raw)
	}
	if len(rebuilt) != 2 {
		t.Fatalf("rebuilt %+v", rebuilt)
	}
	for _, r := range rebuilt {
		if r.Status != delivery.RcptDelivered || r.Code != 250 || r.Attempts != 1 || r.Message == "" || r.Stage == "" {
			t.Errorf("rebuilt outcome %+v", r)
		}
	}
	reads := func() string { return emailReads(b, id) }
	compact := reads()
	// Stored whole, as before the cut: the same answers and outcomes.
	full, _ := json.Marshal(rebuilt)
	if _, err := b.a.DB.Exec(ctx, `UPDATE emails SET recipients = ? WHERE id = ?`, string(full), id); err != nil {
		t.Fatal(err)
	}
	if whole := reads(); whole != compact {
		t.Errorf("reads differ from the row storing its outcomes:\n%s\n---\n%s", compact, whole)
	}
	if got := b.row(t, id).Recipients; !reflect.DeepEqual(got, rebuilt) {
		t.Errorf("outcomes stored whole %+v, rebuilt %+v", got, rebuilt)
	}
}

// TestDeliveredToCompacted (#47): an email delivered to each of its To
// addresses, as written, stores the delivered mark alone
// (sending.DeliveredTo), and its attempt rows its one address as the empty string; every
// read (the email, its attempts, the list, the delivery engine's) answers
// as when the addresses, or the outcomes, were stored.
func TestDeliveredToCompacted(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	id := b.insert(t, send{From: "News <news@example.com>", To: []string{"ann@example.net"}, Subject: "Hi", Text: "hello"})
	rebuilt := b.waitStatus(t, id, sending.StatusDelivered).Recipients
	var raw string
	if err := b.a.DB.QueryRow(ctx, `SELECT recipients FROM emails WHERE id = ?`, id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != sending.DeliveredTo {
		t.Errorf("stored recipients %s, want %s", raw, sending.DeliveredTo)
	}
	if len(rebuilt) != 1 || rebuilt[0].Email != "ann@example.net" || rebuilt[0].Status != delivery.RcptDelivered || rebuilt[0].Code != 250 {
		t.Fatalf("rebuilt %+v", rebuilt)
	}
	reads := func() string { return emailReads(b, id) }
	compact := reads()
	// Its attempt row stores its one address as '' (soleRecipient).
	var rcpt string
	if err := b.a.DB.QueryRow(ctx, `SELECT recipient FROM email_attempts WHERE email_id = ?`, id).Scan(&rcpt); err != nil || rcpt != "" {
		t.Errorf("attempt stored for %q (%v), want ''", rcpt, err)
	}
	if !strings.Contains(compact, `"recipient":"ann@example.net"`) {
		t.Errorf("attempts read without their recipient:\n%s", compact)
	}
	if _, err := b.a.DB.Exec(ctx, `UPDATE email_attempts SET recipient = 'ann@example.net' WHERE email_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	full, _ := json.Marshal(rebuilt)
	for _, stored := range []string{`["=","ann@example.net"]`, string(full)} {
		if _, err := b.a.DB.Exec(ctx, `UPDATE emails SET recipients = ? WHERE id = ?`, stored, id); err != nil {
			t.Fatal(err)
		}
		if whole := reads(); whole != compact {
			t.Errorf("reads differ from the row storing %s:\n%s\n---\n%s", stored, compact, whole)
		}
		if got := b.row(t, id).Recipients; !reflect.DeepEqual(got, rebuilt) {
			t.Errorf("outcomes stored as %s: %+v, rebuilt %+v", stored, got, rebuilt)
		}
	}
}

// emailReads is what the API answers about email id: the email, its
// attempts and the list holding it, to compare stored forms by.
func emailReads(b *bundle, id string) string {
	var out []string
	for _, p := range []string{"/v1/emails/" + id, "/v1/emails/" + id + "/attempts", "/v1/emails?limit=3"} {
		out = append(out, string(b.a.Do("GET", p, nil).Body))
	}
	return strings.Join(out, "\n")
}
