package delivery_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"mailroom/internal/delivery"
	"mailroom/internal/sending"
	"mailroom/internal/testkit/testapp"
)

// TestReportsAreBelievedOnlyWhenTrusted: a bounce counts only at a return
// path Mailroom signed, and only for the recipients it names that the
// email went to; a complaint counts only from an authenticated
// feedback-loop sender, and only for the recipient it names. Forged
// reports are refused (bounce addresses) or accepted and ignored
// (complaints) and change nothing: no suppression, no event, no
// complaint counted.
func TestReportsAreBelievedOnlyWhenTrusted(t *testing.T) {
	// reports.example.net is listed too, but signs nothing.
	b := setup(t, testapp.WithEnv("MAILROOM_FBL_SENDERS", fblDomain+",reports.example.net"))
	three := []string{"ann@example.net", "bob@example.net", "cat@example.org"}
	complainedAbout := b.insert(t, send{From: "news@example.com", To: three, Subject: "hello", Text: "x"})
	bouncedFrom := b.insert(t, send{From: "news@example.com", To: three, Subject: "hello", Text: "x"})
	msgID := b.waitStatus(t, complainedAbout, sending.StatusDelivered).MessageID
	b.waitStatus(t, bouncedFrom, sending.StatusDelivered)
	signed := b.a.VERP().Address(bouncedFrom, "example.com")

	// nothingChanged checks that no recipient of either email is
	// suppressed or has left delivered.
	nothingChanged := func(t *testing.T) {
		t.Helper()
		for _, id := range []string{complainedAbout, bouncedFrom} {
			r := b.row(t, id)
			for _, rc := range r.Recipients {
				if rc.Status != delivery.RcptDelivered {
					t.Errorf("%s: %s is %s", id, rc.Email, rc.Status)
				}
			}
			if r.Status != sending.StatusDelivered {
				t.Errorf("%s is %s", id, r.Status)
			}
		}
		for _, to := range three {
			if why := b.suppression(t, to); why != "" {
				t.Errorf("%s suppressed (%s)", to, why)
			}
		}
	}

	t.Run("a DSN to an unsigned or wrongly signed bounce address is refused", func(t *testing.T) {
		tag := signed[strings.LastIndexByte(signed, '-')+1 : strings.IndexByte(signed, '@')]
		flipped := "a"
		if tag[0] == 'a' {
			flipped = "b"
		}
		for _, rcpt := range []string{
			"bounces+" + bouncedFrom + "@example.com", // the form before tags
			strings.Replace(signed, "-"+tag, "-"+flipped+tag[1:], 1),
			strings.Replace(signed, bouncedFrom, complainedAbout, 1), // another email's id under this tag
		} {
			err := b.mailIn(t, rcpt, dsn("ann@example.net", msgID))
			var se *smtp.SMTPError
			if !errors.As(err, &se) || se.Code != 550 {
				t.Errorf("RCPT %s: %v, want 550", rcpt, err)
			}
		}
		nothingChanged(t)
	})

	t.Run("a DSN at the feedback address is ignored", func(t *testing.T) {
		if err := b.mailIn(t, "fbl@mailroom.test", dsn("ann@example.net", msgID)); err != nil {
			t.Fatal(err)
		}
		nothingChanged(t)
	})

	t.Run("forged ARFs are accepted and change nothing", func(t *testing.T) {
		for name, raw := range map[string]string{
			"unlisted sender":         strings.Replace(arfFor(msgID, "bob@example.net"), "staff@feedback.example.org", "abuse@forger.example", 1),
			"listed, unauthenticated": arfFor(msgID, "bob@example.net"),
			// A valid signature, but by d=feedback.example.org, which is
			// not aligned with the From domain.
			"listed, signed by another domain": b.signFBL(t, strings.Replace(arfFor(msgID, "bob@example.net"), "From: staff@feedback.example.org", "From: staff@reports.example.net", 1)),
		} {
			if err := b.mailIn(t, "fbl@mailroom.test", raw); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		nothingChanged(t)
		if evs := kinds(b.timeline(t, complainedAbout)); slices.Contains(evs, "email.complained") {
			t.Errorf("timeline %v", evs)
		}
	})

	t.Run("a trusted ARF naming no recipient of a three-recipient email changes nothing", func(t *testing.T) {
		if err := b.mailIn(t, "fbl@mailroom.test", b.signFBL(t, arf(msgID))); err != nil { // Original-Rcpt-To redacted
			t.Fatal(err)
		}
		nothingChanged(t)
	})

	t.Run("a trusted ARF naming one of three suppresses only it", func(t *testing.T) {
		if err := b.mailIn(t, "fbl@mailroom.test", b.signFBL(t, arfFor(msgID, "BOB@example.net"))); err != nil {
			t.Fatal(err)
		}
		r := b.waitStatus(t, complainedAbout, sending.StatusComplained)
		for _, rc := range r.Recipients {
			if want := map[bool]string{true: delivery.RcptComplained, false: delivery.RcptDelivered}[rc.Email == "bob@example.net"]; rc.Status != want {
				t.Errorf("%s is %s, want %s", rc.Email, rc.Status, want)
			}
		}
		for _, to := range three {
			if want := map[bool]string{true: "complaint", false: ""}[to == "bob@example.net"]; b.suppression(t, to) != want {
				t.Errorf("%s suppression %q, want %q", to, b.suppression(t, to), want)
			}
		}
		evs := b.timeline(t, complainedAbout)
		last := evs[len(evs)-1]
		if to, _ := last.Data["to"].([]any); last.Type != "email.complained" || len(to) != 1 || to[0] != "bob@example.net" {
			t.Errorf("event %s %v", last.Type, last.Data)
		}
		// One complaint counted against the workspace: the forged
		// reports before it counted none.
		testapp.Eventually(t, 10*time.Second, func() bool { return b.complaintsCounted(t) == 1 }, "complaints counted %d, want 1", b.complaintsCounted(t))
	})

	t.Run("a genuine DSN to the signed address bounces only the recipient it names", func(t *testing.T) {
		raw := strings.Replace(dsn("cat@example.org", "<nope@example.com>"), "Reporting-MTA: dns; mx.example.net\n", `Reporting-MTA: dns; mx.example.net

Final-Recipient: rfc822; stranger@example.org
Action: failed
Status: 5.1.1
`, 1)
		if err := b.mailIn(t, signed, raw); err != nil {
			t.Fatal(err)
		}
		testapp.Eventually(t, 10*time.Second, func() bool { return b.suppression(t, "cat@example.org") == "bounce" }, "cat@example.org not suppressed")
		r := b.row(t, bouncedFrom)
		for _, rc := range r.Recipients {
			if want := map[bool]string{true: delivery.RcptBounced, false: delivery.RcptDelivered}[rc.Email == "cat@example.org"]; rc.Status != want {
				t.Errorf("%s is %s, want %s", rc.Email, rc.Status, want)
			}
		}
		for _, to := range []string{"ann@example.net", "stranger@example.org"} {
			if why := b.suppression(t, to); why != "" {
				t.Errorf("%s suppressed (%s)", to, why)
			}
		}
	})
}

// TestComplaintTrustedBySPF: a feedback-loop sender that does not sign is
// believed when its SPF passes for a MAIL FROM aligned with its From.
func TestComplaintTrustedBySPF(t *testing.T) {
	b := setup(t)
	b.dns.AddTXT(fblDomain, "v=spf1 ip4:127.0.0.1 -all")
	id := b.insert(t, send{From: "news@example.com", To: []string{"reader@example.org"}, Subject: "hello", Text: "x"})
	msgID := b.waitStatus(t, id, sending.StatusDelivered).MessageID

	// From elsewhere the same unsigned report is not believed.
	if err := b.mailInFrom(t, "fbl@forger.example", "fbl@mailroom.test", arf(msgID)); err != nil {
		t.Fatal(err)
	}
	if b.suppression(t, "reader@example.org") != "" {
		t.Fatal("a report whose SPF does not align was believed")
	}
	if err := b.mailInFrom(t, "bounce@"+fblDomain, "fbl@mailroom.test", arf(msgID)); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, id, sending.StatusComplained)
	if b.suppression(t, "reader@example.org") != "complaint" {
		t.Error("no complaint suppression")
	}
}

// complaintsCounted is the workspace's complaints in the sending policy's
// counters (the complaint rate's numerator), after a flush.
func (b *bundle) complaintsCounted(t *testing.T) int {
	t.Helper()
	if err := b.a.Policy().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.a.DB.QueryRow(context.Background(), `SELECT COALESCE(SUM(complaints), 0) FROM policy_counters WHERE workspace_id = ? AND subject = ''`, b.a.WorkspaceID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
