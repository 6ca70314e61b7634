package delivery_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"mailroom/internal/delivery"
	"mailroom/internal/dnsresolve"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/wait"
)

// verifyDKIM checks the message's one signature against the record in the
// test DNS server and returns its d= domain.
func (b *bundle) verifyDKIM(t *testing.T, raw []byte) string {
	t.Helper()
	res := dnsresolve.New(b.dns.Addr())
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return res.LookupTXT(context.Background(), name) },
	})
	if err != nil {
		t.Fatalf("dkim: %v", err)
	}
	if len(vs) != 1 {
		t.Fatalf("want one DKIM signature, got %d", len(vs))
	}
	if vs[0].Err != nil {
		t.Fatalf("DKIM signature does not verify: %v", vs[0].Err)
	}
	return vs[0].Domain
}

func messageFor(t *testing.T, sink *smtpsink.Sink, rcpt string) smtpsink.Message {
	t.Helper()
	m, ok := sink.WaitMatch(10*time.Second, func(m smtpsink.Message) bool { return slices.Contains(m.To, rcpt) })
	if !ok {
		t.Fatalf("no message for %s reached the sink", rcpt)
	}
	return m
}

func TestDeliveredMessageBytesAndEvents(t *testing.T) {
	b := setup(t)
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte{0, 1, 2, 250, 251, 255}, 3000)...)
	id := b.insert(t, send{
		From:    "Zoë Sender <news@example.com>",
		To:      []string{"Bob <bob@example.net>"},
		Cc:      []string{"carol@example.org"},
		Bcc:     []string{"dave@example.net"},
		Subject: "Grüße und Küsse",
		HTML:    "<p>Hello <b>Bob</b></p>",
		Text:    "Hello Bob",
		Headers: map[string]string{"In-Reply-To": "<root@example.com>", "References": "<root@example.com>"},
		Attachments: []map[string]string{{
			"filename": "report.pdf", "content_base64": base64.StdEncoding.EncodeToString(pdf),
		}},
		Tags: map[string]string{"campaign": "spring"},
	})
	r := b.waitStatus(t, id, sending.StatusDelivered)
	if r.MessageID != "<"+id+"@example.com>" {
		t.Errorf("message_id = %q", r.MessageID)
	}
	if len(r.Recipients) != 3 {
		t.Fatalf("recipients = %+v", r.Recipients)
	}
	for _, rc := range r.Recipients {
		if rc.Status != delivery.RcptDelivered || rc.Code != 250 || rc.Attempts != 1 {
			t.Errorf("recipient %+v", rc)
		}
	}

	// Two domains, so two transactions (one per MX), each with its
	// recipients; Bcc in the envelope only.
	m1 := messageFor(t, b.sink, "bob@example.net")
	if !slices.Equal(m1.To, []string{"bob@example.net", "dave@example.net"}) {
		t.Errorf("example.net envelope = %v", m1.To)
	}
	messageFor(t, b.sink, "carol@example.org")
	if m1.From != b.a.VERP().Address(id, "example.com") {
		t.Errorf("return path = %q", m1.From)
	}
	if d := b.verifyDKIM(t, m1.Data); d != "example.com" {
		t.Errorf("signed by %q", d)
	}
	if bytes.Contains(bytes.ToLower(m1.Data), []byte("\nbcc:")) || bytes.Contains(m1.Data, []byte("dave@")) {
		t.Error("Bcc leaked into the message")
	}
	mr, err := mail.CreateReader(bytes.NewReader(m1.Data))
	if err != nil {
		t.Fatal(err)
	}
	h := mr.Header
	if subj, _ := h.Subject(); subj != "Grüße und Küsse" {
		t.Errorf("subject = %q", subj)
	}
	if !strings.Contains(h.Get("Subject"), "=?") {
		t.Errorf("non-ASCII subject not RFC 2047 encoded: %q", h.Get("Subject"))
	}
	if got := h.Get("Message-Id"); got != "<"+id+"@example.com>" {
		t.Errorf("Message-ID = %q", got)
	}
	if h.Get("In-Reply-To") != "<root@example.com>" || h.Get("Date") == "" {
		t.Errorf("In-Reply-To %q Date %q", h.Get("In-Reply-To"), h.Get("Date"))
	}
	if from, _ := h.AddressList("From"); len(from) != 1 || from[0].Name != "Zoë Sender" {
		t.Errorf("From = %v", from)
	}
	typ, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if typ != "multipart/mixed" {
		t.Errorf("top-level type %s", typ)
	}
	var parts []string
	var att []byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ph := p.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := ph.ContentType()
			body, _ := io.ReadAll(p.Body)
			parts = append(parts, ct+":"+strings.TrimSpace(string(body)))
		case *mail.AttachmentHeader:
			name, _ := ph.Filename()
			ct, _, _ := ph.ContentType()
			parts = append(parts, "attachment:"+name+":"+ct)
			att, _ = io.ReadAll(p.Body)
		}
	}
	want := []string{"text/plain:Hello Bob", "text/html:<p>Hello <b>Bob</b></p>", "attachment:report.pdf:application/pdf"}
	if !slices.Equal(parts, want) {
		t.Errorf("parts = %q, want %q", parts, want)
	}
	if !bytes.Equal(att, pdf) {
		t.Errorf("attachment bytes differ (%d vs %d)", len(att), len(pdf))
	}

	evs := b.timeline(t, id)
	if got := kinds(evs); !slices.Equal(got, []string{"email.sent", "email.delivered"}) {
		t.Fatalf("events = %v", got)
	}
	d := evs[1].Data
	if d["email_id"] != id || d["subject"] != "Grüße und Küsse" || d["from"] != "Zoë Sender <news@example.com>" {
		t.Errorf("delivered data = %v", d)
	}
	if tags, _ := d["tags"].(map[string]any); tags["campaign"] != "spring" {
		t.Errorf("tags = %v", d["tags"])
	}
	if _, ok := d["test_mode"]; ok {
		t.Error("test_mode set on a real send")
	}
	if to, _ := d["to"].([]any); len(to) != 3 {
		t.Errorf("to = %v", d["to"])
	}
}

func TestOutcomes(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	if _, _, err := suppressions.AddGlobal(ctx, b.a.DB, "gone@example.net", suppressions.ReasonManual, time.Now()); err != nil {
		t.Fatal(err)
	}
	hard := b.insert(t, send{From: "news@example.com", To: []string{"reject-me@example.net"}, Subject: "hard", Text: "x", Tags: map[string]string{"k": "v"}})
	nodomain := b.insert(t, send{From: "news@example.com", To: []string{"someone@nowhere.example.net.invalid"}, Subject: "nx", Text: "x"})
	suppressed := b.insert(t, send{From: "news@example.com", To: []string{"Gone@example.net"}, Subject: "sup", Text: "x"})
	sandbox := b.insert(t, send{From: "Mailroom <onboarding@mailroom.test>", To: []string{"new-user@example.org"}, Subject: "hi", Text: "x"})
	mixed := b.insert(t, send{From: "news@example.com", To: []string{"ok@example.net", "reject@example.net", "defer@example.net"}, Subject: "mixed", Text: "x"})
	dropped := b.insert(t, send{From: "news@example.com", To: []string{"drop@example.org"}, Subject: "drop", Text: "x"})

	t.Run("5xx bounces hard and suppresses", func(t *testing.T) {
		r := b.waitStatus(t, hard, sending.StatusBounced)
		if r.Recipients[0].Code != 550 || r.Recipients[0].Enhanced != "5.1.1" {
			t.Errorf("recipient %+v", r.Recipients[0])
		}
		evs := b.timeline(t, hard)
		if got := kinds(evs); !slices.Equal(got, []string{"email.bounced"}) {
			t.Fatalf("events %v", got)
		}
		d := evs[0].Data
		if d["bounce_type"] != "hard" || d["bounce_subtype"] != "mailbox_unavailable" || !strings.Contains(d["diagnostic"].(string), "550 5.1.1 No such user") {
			t.Errorf("bounce data %v", d)
		}
		if tags, _ := d["tags"].(map[string]any); tags["k"] != "v" {
			t.Errorf("tags %v", d["tags"])
		}
		if got := b.suppression(t, "reject-me@example.net"); got != "bounce" {
			t.Errorf("suppression reason %q", got)
		}
	})
	t.Run("a domain that does not exist bounces hard", func(t *testing.T) {
		b.waitStatus(t, nodomain, sending.StatusBounced)
		evs := b.timeline(t, nodomain)
		if len(evs) != 1 || evs[0].Data["bounce_type"] != "hard" || evs[0].Data["bounce_subtype"] != "dns_failure" {
			t.Errorf("events %v", evs)
		}
	})
	t.Run("suppressed at send time fails without sending", func(t *testing.T) {
		r := b.waitStatus(t, suppressed, sending.StatusFailed)
		if r.Recipients[0].Status != delivery.RcptSuppressed || !strings.Contains(r.LastError, "suppressed") {
			t.Errorf("row %+v", r)
		}
		if evs := b.timeline(t, suppressed); len(evs) != 0 {
			t.Errorf("events %v", kinds(evs))
		}
	})
	t.Run("sandbox sender is signed by the service domain", func(t *testing.T) {
		b.waitStatus(t, sandbox, sending.StatusDelivered)
		m := messageFor(t, b.sink, "new-user@example.org")
		if d := b.verifyDKIM(t, m.Data); d != "mailroom.test" {
			t.Errorf("signed by %q", d)
		}
		if m.From != b.a.VERP().Address(sandbox, "mailroom.test") {
			t.Errorf("return path %q", m.From)
		}
	})
	t.Run("mixed outcomes per recipient, the deferred one retried later", func(t *testing.T) {
		// The row is read after the fourth event: a row read before it may
		// predate the commit that wrote the events and the recipients.
		waitFor(t, func() bool { return len(b.timeline(t, mixed)) >= 4 })
		r := b.row(t, mixed)
		if r.Status != sending.StatusSending {
			t.Errorf("status %q while a recipient is owed", r.Status)
		}
		got := map[string]string{}
		for _, rc := range r.Recipients {
			got[rc.Email] = rc.Status
		}
		if got["ok@example.net"] != "delivered" || got["reject@example.net"] != "bounced" || got["defer@example.net"] != "deferred" {
			t.Errorf("recipients %v", got)
		}
		if got := kinds(b.timeline(t, mixed)); !slices.Equal(got, []string{"email.sent", "email.delivered", "email.bounced", "email.deferred"}) {
			t.Errorf("events %v", got)
		}
		b.assertSnoozed(t, mixed, time.Minute)
		var n int
		b.a.DB.QueryRow(ctx, `SELECT count(*) FROM outbound_messages WHERE email_id = ?`, mixed).Scan(&n)
		if n != 1 {
			t.Errorf("signed message not kept for the retry")
		}
	})
	t.Run("dropped connection is retried", func(t *testing.T) {
		var r row
		waitFor(t, func() bool {
			r = b.row(t, dropped)
			return len(r.Recipients) == 1 && r.Recipients[0].Status == delivery.RcptDeferred
		})
		if r.Status != sending.StatusSending || r.Recipients[0].Attempts != 1 {
			t.Errorf("row %+v", r)
		}
		b.assertSnoozed(t, dropped, time.Minute)
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	wait.For(t, 15*time.Second, cond, "the condition never held")
}

// assertSnoozed checks the email's deliver job waits about d for its next
// attempt.
func (b *bundle) assertSnoozed(t *testing.T, emailID string, d time.Duration) {
	t.Helper()
	var at time.Time
	waitFor(t, func() bool {
		res, err := b.a.Queue.Client.JobList(context.Background(), river.NewJobListParams().Kinds("deliver").States(rivertype.JobStateScheduled).First(1000))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range res.Jobs {
			if strings.Contains(string(j.EncodedArgs), emailID) {
				at = j.ScheduledAt
				return true
			}
		}
		return false
	})
	if wait := time.Until(at); wait < d-10*time.Second || wait > d+time.Second {
		t.Errorf("next attempt in %v, want about %v", wait, d)
	}
}

func TestTemporaryFailuresRunOutAsSoftBounce(t *testing.T) {
	b := setup(t)
	id := b.insert(t, send{From: "news@example.com", To: []string{"defer@example.net"}, Subject: "t", Text: "x"})
	waitFor(t, func() bool { r := b.row(t, id); return len(r.Recipients) == 1 && r.Recipients[0].Attempts == 1 })
	schedule := delivery.DefaultRetrySchedule()
	var total time.Duration
	for _, d := range schedule {
		total += d
	}
	if total < 70*time.Hour || total > 74*time.Hour {
		t.Errorf("retry schedule spans %v, want about three days", total)
	}
	// The queue holds the job for the schedule's waits; the test makes the
	// attempts itself instead of waiting days.
	for attempt := 2; attempt <= len(schedule)+1; attempt++ {
		next, err := b.a.Delivery().Deliver(context.Background(), b.a.WorkspaceID, id)
		if err != nil {
			t.Fatal(err)
		}
		if attempt <= len(schedule) && next != schedule[attempt-1] {
			t.Errorf("attempt %d: next wait %v, want %v", attempt, next, schedule[attempt-1])
		}
		if attempt == len(schedule)+1 && next != 0 {
			t.Errorf("after the last attempt: next wait %v", next)
		}
	}
	r := b.row(t, id)
	if r.Status != sending.StatusBounced || r.Recipients[0].Attempts != len(schedule)+1 {
		t.Fatalf("row %+v", r)
	}
	evs := b.timeline(t, id)
	last := evs[len(evs)-1]
	if last.Type != "email.bounced" || last.Data["bounce_type"] != "soft" {
		t.Errorf("last event %s %v", last.Type, last.Data)
	}
	if n := strings.Count(strings.Join(kinds(evs), ","), "email.deferred"); n != len(schedule) {
		t.Errorf("%d deferrals on the timeline, want %d", n, len(schedule))
	}
	if b.suppression(t, "defer@example.net") != "" {
		t.Error("a soft bounce suppressed the address")
	}
	var n int
	b.a.DB.QueryRow(context.Background(), `SELECT count(*) FROM outbound_messages WHERE email_id = ?`, id).Scan(&n)
	if n != 0 {
		t.Error("kept message not removed once final")
	}
}
