package broadcasts_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestRecipientEmailStoredBrief (#47, 00123): a delivered broadcast
// recipient's email stores none of what its broadcast's emails share (From,
// Reply-To, tags, class, the head of its body source: email_shared), its recipients
// as the delivered mark alone, and its two events in brief (no id, workspace,
// kind or data). Every read answers byte for byte what it answers when the
// same rows are stored whole, as before: the email, the list, its attempts,
// and its webhook envelopes.
func TestRecipientEmailStoredBrief(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 2)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "reply_to": "desk@mailroom.test",
		"audience_id": aud, "subject": "For {{ first_name }}", "html": `<p>Hi {{ first_name }}</p>`}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 30*time.Second, func() bool { return sink.Count() == 2 }, "the broadcast did not reach its members")

	ctx := t.Context()
	col, err := a.DB.Column(ctx, `SELECT id FROM emails WHERE shared_id IS NOT NULL ORDER BY id`)
	if err != nil || len(col) != 2 {
		t.Fatalf("emails with a shared row: %v (%v)", col, err)
	}
	var ids []string
	for _, id := range col {
		ids = append(ids, fmt.Sprint(id))
	}
	testapp.Eventually(t, 20*time.Second, func() bool {
		n := 0
		err := a.DB.QueryRow(ctx, `SELECT COUNT(*) FROM emails WHERE shared_id IS NOT NULL AND status = 'delivered'`).Scan(&n)
		return err == nil && n == 2
	}, "the emails were not delivered")

	reads := func() string {
		var out []string
		for _, id := range ids {
			for _, p := range []string{"/v1/emails/" + id, "/v1/emails/sent/" + id + "/attempts"} {
				r := a.Do(http.MethodGet, p, nil)
				out = append(out, p+" "+string(r.Body))
			}
			evs, err := events.WebhookEventsOfEmail(ctx, a.DB, a.WorkspaceID, id, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				body, err := ev.Envelope()
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(body))
			}
			var seqs []any
			for _, ev := range evs {
				seqs = append(seqs, ev.Seq)
			}
			if err := events.Envelopes(ctx, a.DB, seqs, func(_, _ string, body []byte) { out = append(out, string(body)) }); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, string(a.Do(http.MethodGet, "/v1/emails?limit=10", nil).Body))
		return strings.Join(out, "\n")
	}
	brief := reads()
	if !strings.Contains(brief, `"reply_to":["desk@mailroom.test"]`) || !strings.Contains(brief, `"broadcast_id":"`+bc+`"`) ||
		strings.Count(brief, `"event":"email.delivered"`) != 4 {
		t.Fatalf("reads lack the broadcast's reply-to, tag or delivered events:\n%s", brief)
	}

	// As stored: the shared fields and the events' ids, workspaces, kinds
	// and data left out.
	for _, id := range ids {
		var from, tags, replyTo, cc, headers, class, recipients string
		if err := a.DB.QueryRow(ctx, `SELECT from_addr, tags, reply_to, cc_addrs, headers, mail_class, recipients FROM emails WHERE id = ?`, id).
			Scan(&from, &tags, &replyTo, &cc, &headers, &class, &recipients); err != nil {
			t.Fatal(err)
		}
		if from+tags+replyTo+cc+headers+class != "" || recipients != `["="]` {
			t.Errorf("%s stores from %q tags %q reply_to %q cc %q headers %q recipients %s", id, from, tags, replyTo, cc, headers, recipients)
		}
		var whole int
		if err := a.DB.QueryRow(ctx, `SELECT COUNT(*) FROM events WHERE email_id = ? AND (id <> '' OR workspace_id <> '' OR type <> '' OR data <> '')
			AND type IN ('', 'email.sent', 'email.delivered')`, id).Scan(&whole); err != nil || whole != 0 {
			t.Errorf("%s: %d of its sent and delivered events stored whole (%v)", id, whole, err)
		}
	}

	// The same rows stored whole, as a version before 00123 wrote them
	// (the events with the ids the reads gave).
	stmts := []string{`UPDATE emails SET from_addr = (SELECT s.from_addr FROM email_shared s WHERE s.id = emails.shared_id),
		reply_to = (SELECT s.reply_to FROM email_shared s WHERE s.id = emails.shared_id),
		tags = (SELECT s.tags FROM email_shared s WHERE s.id = emails.shared_id),
		mail_class = (SELECT s.mail_class FROM email_shared s WHERE s.id = emails.shared_id),
		body_source = (SELECT s.source_prefix FROM email_shared s WHERE s.id = emails.shared_id) || body_source,
		cc_addrs = '[]', bcc_addrs = '[]', headers = '{}', attachments = '[]', shared_id = NULL WHERE shared_id IS NOT NULL`}
	for _, st := range stmts {
		if _, err := a.DB.Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		r := mustStatus(t, a.Do(http.MethodGet, "/v1/emails/"+id, nil), 200)
		to := r["to"].([]any)[0].(string)
		if _, err := a.DB.Exec(ctx, `UPDATE emails SET recipients = ? WHERE id = ?`, `["=","`+to+`"]`, id); err != nil {
			t.Fatal(err)
		}
		evs, err := events.WebhookEventsOfEmail(ctx, a.DB, a.WorkspaceID, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if _, err := a.DB.Exec(ctx, `UPDATE events SET id = ?, workspace_id = ?, type = ? WHERE seq = ?`, ev.ID, a.WorkspaceID, ev.Type, ev.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if whole := reads(); whole != brief {
		t.Errorf("reads of the rows stored in brief:\n%s\n--- differ from those of the rows stored whole:\n%s", brief, whole)
	}
}
