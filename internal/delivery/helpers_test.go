package delivery_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"mailroom/internal/delivery"
	"mailroom/internal/events"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testkeys"
)

// testKeys signs example.com mail with one RSA key and the service
// domain's mail with another, both published in the test DNS server.
type testKeys struct {
	domain, selector string
	key              *rsa.PrivateKey
	svcKey           *rsa.PrivateKey
}

func (k *testKeys) SigningKey(_ context.Context, _, domain string) (string, crypto.Signer, error) {
	if domain != k.domain {
		return "", nil, store.ErrNotFound
	}
	return k.selector, k.key, nil
}

func (k *testKeys) ServiceKey(context.Context) (string, string, crypto.Signer, error) {
	return "mailroom.test", "mr1", k.svcKey, nil
}

func (k *testKeys) ReturnPathDomain(_ context.Context, _, domain string) (string, error) {
	return domain, nil
}

type bundle struct {
	a    *testapp.App
	sink *smtpsink.Sink
	dns  *dnstest.Server
	keys *testKeys
	// fblKey signs the feedback reports of feedback.example.org, the
	// feedback-loop sender the tests' nodes believe (MAILROOM_FBL_SENDERS).
	fblKey ed25519.PrivateKey
}

// fblDomain is the tests' feedback-loop operator.
const fblDomain = "feedback.example.org"

// setup starts a node that delivers directly to MX hosts: every recipient
// domain of the tests points at the sink through the test DNS server.
func setup(t *testing.T, opts ...testapp.Option) *bundle {
	t.Helper()
	return setupSink(t, nil, opts...)
}

// setupSink is setup with a sink configured by sinkOpts.
func setupSink(t *testing.T, sinkOpts []smtpsink.Option, opts ...testapp.Option) *bundle {
	t.Helper()
	sink := smtpsink.Start(t, sinkOpts...)
	dns := dnstest.Start(t)
	for _, d := range []string{"example.net", "example.org"} {
		dns.AddMX(d, "mx."+d, 10)
		dns.AddA("mx."+d, "127.0.0.1")
	}
	keys := &testKeys{domain: "example.com", selector: "s1", key: testkeys.Key(0), svcKey: testkeys.Key(1)}
	_, fblKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name string
		key  crypto.Signer
	}{{"s1._domainkey.example.com", keys.key}, {"mr1._domainkey.mailroom.test", keys.svcKey}, {"fbl._domainkey." + fblDomain, fblKey}} {
		rec, err := outbound.DKIMPublicRecord(p.key.Public())
		if err != nil {
			t.Fatal(err)
		}
		dns.AddTXT(p.name, rec)
	}
	opts = append([]testapp.Option{
		testapp.WithEnv("MAILROOM_OUTBOUND", "mx"),
		testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()),
		testapp.WithEnv("MAILROOM_SMTP_PORT", strconv.Itoa(sink.Port())),
		testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
		testapp.WithEnv("MAILROOM_FBL_SENDERS", fblDomain),
	}, opts...)
	a := testapp.Start(t, opts...)
	a.Delivery().SetKeys(keys)
	return &bundle{a: a, sink: sink, dns: dns, keys: keys, fblKey: fblKey}
}

// send is an email row as the sending area stores it.
type send struct {
	From         string
	To, Cc, Bcc  []string
	Subject      string
	HTML, Text   string
	Headers      map[string]string
	Attachments  []map[string]string
	Tags         map[string]string
	WorkspaceID  string
	SkipDelivery bool // insert the row without its job
}

func list(l []string) string {
	if l == nil {
		l = []string{}
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	if string(b) == "null" {
		return "{}"
	}
	return string(b)
}

// insert stores a queued email and its deliver job in one transaction, as
// the sending area does when it accepts a send.
func (b *bundle) insert(t *testing.T, s send) string {
	t.Helper()
	ws := s.WorkspaceID
	if ws == "" {
		ws = b.a.WorkspaceID
	}
	return insertEmail(t, b.a.DB, ws, s)
}

func insertEmail(t testing.TB, db *store.DB, ws string, s send) string {
	t.Helper()
	id := ids.New("em")
	now := store.Millis(time.Now())
	atts := "[]"
	if s.Attachments != nil {
		b, _ := json.Marshal(s.Attachments)
		atts = string(b)
	}
	var html, text any
	if s.HTML != "" {
		html = s.HTML
	}
	if s.Text != "" {
		text = s.Text
	}
	err := db.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO emails (id, workspace_id, status, from_addr, to_addrs, cc_addrs, bcc_addrs,
			reply_to, subject, html, text_body, headers, attachments, tags, created_at, updated_at)
			VALUES (?, ?, 'queued', ?, ?, ?, ?, '[]', ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, ws, s.From, list(s.To), list(s.Cc), list(s.Bcc), s.Subject, html, text, jsonOf(s.Headers), atts, jsonOf(s.Tags), now, now)
		if err != nil {
			return err
		}
		if !s.SkipDelivery {
			tx.AddJob(jobs.DeliverArgs{EmailID: id, WorkspaceID: ws})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("inserting email: %v", err)
	}
	return id
}

type row struct {
	Status     sending.EmailStatus
	MessageID  string
	LastError  string
	Recipients []delivery.Recipient
}

func (b *bundle) row(t *testing.T, id string) row {
	t.Helper()
	var r row
	if err := b.a.DB.QueryRow(context.Background(), `SELECT status, last_error FROM emails WHERE id = ?`, id).
		Scan(&r.Status, &r.LastError); err != nil {
		t.Fatal(err)
	}
	// The Message-ID as read (a derivable one is not stored).
	o, err := sending.LoadOutgoing(context.Background(), b.a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	r.MessageID = o.MessageID
	// The outcomes as read (a delivered list is rebuilt from the attempts).
	if r.Recipients, err = delivery.DecodeRecipients(context.Background(), b.a.DB, id, o.Recipients); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitStatus waits until the email leaves queued/sending (or reaches want).
func (b *bundle) waitStatus(t *testing.T, id string, want sending.EmailStatus) row {
	t.Helper()
	var r row
	testapp.Eventually(t, 20*time.Second, func() bool {
		r = b.row(t, id)
		return r.Status == want
	}, "email %s never reached %s", id, want)
	return r
}

func (b *bundle) timeline(t *testing.T, id string) []events.Event {
	t.Helper()
	evs, err := events.Timeline(context.Background(), b.a.DB, b.a.WorkspaceID, id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func kinds(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func (b *bundle) suppression(t *testing.T, email string) string {
	t.Helper()
	var reason string
	err := b.a.DB.QueryRow(context.Background(), `SELECT reason FROM suppressions WHERE workspace_id = ? AND email = ?`, b.a.WorkspaceID, email).Scan(&reason)
	if err != nil {
		return ""
	}
	return reason
}
