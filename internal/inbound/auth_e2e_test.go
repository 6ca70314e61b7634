package inbound_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	mdns "github.com/miekg/dns"

	"mailroom/internal/clock"
	"mailroom/internal/inbound"
	"mailroom/internal/smtpin"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/testapp"
)

// dkimSign signs raw as domain with selector and key.
func dkimSign(t *testing.T, raw, domain, selector string, key ed25519.PrivateKey) string {
	t.Helper()
	var b bytes.Buffer
	err := dkim.Sign(&b, strings.NewReader(raw), &dkim.SignOptions{Domain: domain, Selector: selector, Signer: key,
		HeaderKeys: []string{"From", "To", "Subject", "Date", "Message-ID"}})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestAuthenticationResults receives mail over SMTP from 127.0.0.1 with
// SPF, DKIM and DMARC records served by a real DNS server, and checks the
// auth block, the Authentication-Results header, spam_verdict and
// automated for each case.
func TestAuthenticationResults(t *testing.T) {
	dns := dnstest.Start(t)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dkimRecord := "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)
	// sender.example: our IP may send, signs with sel, strict DKIM and
	// relaxed SPF alignment, reject.
	dns.AddTXT("sender.example", "v=spf1 ip4:127.0.0.1 -all")
	dns.AddTXT("sel._domainkey.sender.example", dkimRecord)
	dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject; adkim=s; aspf=r")
	// spoofed.example: nobody may send, reject.
	dns.AddTXT("spoofed.example", "v=spf1 -all")
	dns.AddTXT("_dmarc.spoofed.example", "v=DMARC1; p=reject")
	// lax.example: softfail, p=none.
	dns.AddTXT("lax.example", "v=spf1 ~all")
	dns.AddTXT("_dmarc.lax.example", "v=DMARC1; p=none")

	a, inbox := startSMTP(t, testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()))
	msg := func(from, subject, extra string) string {
		return "From: " + from + "\r\nTo: " + inbox + "\r\nSubject: " + subject + "\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\n" +
			"Message-ID: <" + strings.ReplaceAll(subject, " ", "-") + "@x>\r\n" + extra + "\r\nHello there.\r\n"
	}
	type want struct {
		spf, dkim, dmarc, verdict string
		automated                 bool
		header                    []string // substrings of our Authentication-Results
	}
	cases := []struct {
		name, mailFrom, raw string
		want
	}{
		{"aligned", "ann@sender.example", dkimSign(t, msg("Ann <ann@sender.example>", "aligned", ""), "sender.example", "sel", key),
			want{"pass", "pass", "pass", "pass", false, []string{"mailroom.test;", "spf=pass", "dkim=pass header.d=sender.example", "dmarc=pass header.from=sender.example"}}},
		// SPF passes for sender.example and aligns relaxed with the
		// subdomain; the record is found at the organizational domain.
		{"relaxed spf", "bounce@sender.example", msg("news@news.sender.example", "relaxed", ""),
			want{"pass", "none", "pass", "pass", false, []string{"spf=pass", "dkim=none", "dmarc=pass"}}},
		// A valid signature by sender.example does not align strictly with
		// a subdomain From, and SPF for another domain does not help.
		{"strict dkim", "x@lax.example", dkimSign(t, msg("news@news.sender.example", "strict", ""), "sender.example", "sel", key),
			want{"fail", "pass", "fail", "spam", false, []string{"spf=softfail", "dkim=pass", "dmarc=fail"}}},
		{"spoofed", "boss@spoofed.example", dkimSign(t, msg("boss@spoofed.example", "spoofed", ""), "sender.example", "sel", key),
			want{"fail", "pass", "fail", "spam", false, []string{"spf=fail", "dkim=pass header.d=sender.example", "dmarc=fail"}}},
		{"tampered", "ann@sender.example", strings.Replace(dkimSign(t, msg("ann@sender.example", "tampered", ""), "sender.example", "sel", key), "Hello there.", "Hello thief.", 1),
			want{"pass", "fail", "pass", "suspect", false, []string{"spf=pass", "dkim=fail", "dmarc=pass"}}},
		{"p=none", "x@lax.example", msg("x@lax.example", "lax", ""),
			want{"fail", "none", "fail", "suspect", false, []string{"spf=softfail", "dmarc=fail"}}},
		{"unknown domain", "who@nowhere.example", msg("who@nowhere.example", "unknown", ""),
			want{"none", "none", "none", "unchecked", false, []string{"spf=none", "dkim=none", "dmarc=none"}}},
		{"auto reply", "ann@sender.example", msg("ann@sender.example", "away", "Auto-Submitted: auto-replied\r\n"),
			want{"pass", "none", "pass", "pass", true, nil}},
		{"bounce", "", msg("MAILER-DAEMON@nowhere.example", "bounce", ""),
			want{"none", "none", "none", "unchecked", true, nil}},
		{"bulk", "ann@sender.example", msg("ann@sender.example", "bulk", "Precedence: bulk\r\n"),
			want{"pass", "none", "pass", "pass", true, nil}},
		{"executable", "ann@sender.example", "From: ann@sender.example\r\nSubject: invoice\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <inv@x>\r\n" +
			"Content-Type: application/octet-stream; name=\"invoice.pdf.exe\"\r\nContent-Disposition: attachment\r\n\r\nMZ\r\n",
			want{"pass", "none", "pass", "suspect", false, nil}},
	}
	for _, c := range cases {
		if err := send(t, a.SMTPAddr(), c.mailFrom, []string{inbox}, c.raw); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var list struct {
			Messages []struct {
				ID          string
				SpamVerdict string `json:"spam_verdict"`
				Automated   bool
				Auth        struct{ SPF, DKIM, DMARC string }
			}
		}
		a.Do("GET", "/v1/messages?limit=1", nil).Decode(t, &list)
		m := list.Messages[0]
		got := want{m.Auth.SPF, m.Auth.DKIM, m.Auth.DMARC, m.SpamVerdict, m.Automated, nil}
		if got.spf != c.spf || got.dkim != c.dkim || got.dmarc != c.dmarc || got.verdict != c.verdict || got.automated != c.automated {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		var full struct{ Headers map[string]string }
		a.Do("GET", "/v1/messages/"+m.ID, nil).Decode(t, &full)
		t.Logf("%s: %s", c.name, full.Headers["authentication-results"])
		for _, s := range c.header {
			if !strings.Contains(full.Headers["authentication-results"], s) {
				t.Errorf("%s: Authentication-Results %q lacks %q", c.name, full.Headers["authentication-results"], s)
			}
		}
	}
}

// TestAuthLookupsCached: the TXT answers of the checks (SPF policy, DKIM
// key, DMARC record) are reused for a minute (issue 47), so a run of mail
// from one sender asks DNS once; after the minute a changed record counts.
// Here the key is withdrawn after the first message: the second, within the
// minute, still passes on the remembered key; the third, after it, fails.
func TestAuthLookupsCached(t *testing.T) {
	dns := dnstest.Start(t)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dns.AddTXT("sender.example", "v=spf1 ip4:127.0.0.1 -all")
	dns.AddTXT("sel._domainkey.sender.example", "v=DKIM1; k=ed25519; p="+base64.StdEncoding.EncodeToString(pub))
	dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject")
	c := clock.NewFake(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()), testapp.WithClock(c))
	mbs, err := a.Inbound().Mailboxes(t.Context(), a.WorkspaceID, "")
	if err != nil {
		t.Fatal(err)
	}
	m := &mbs[0]
	env := smtpin.Envelope{RemoteIP: net.ParseIP("127.0.0.1"), Helo: "mx.sender.example", MailFrom: "ann@sender.example", Rcpt: m.Address}
	receive := func(i int) *inbound.Message {
		t.Helper()
		raw := dkimSign(t, "From: Ann <ann@sender.example>\r\nTo: "+m.Address+"\r\nSubject: cached "+strconv.Itoa(i)+
			"\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <cached-"+strconv.Itoa(i)+"@sender.example>\r\n\r\nHello.\r\n",
			"sender.example", "sel", key)
		r, err := a.Inbound().Receive(t.Context(), m, env, []byte(raw))
		if err != nil || r.MessageID == "" {
			t.Fatalf("Receive: %+v, %v", r, err)
		}
		got, err := a.Inbound().Message(t.Context(), inbound.Reader{WorkspaceID: a.WorkspaceID}, r.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := receive(1); got.Auth.DKIM != "pass" || got.Auth.DMARC != "pass" {
		t.Fatalf("first message: auth %+v", got.Auth)
	}
	dns.Remove("sel._domainkey.sender.example", mdns.TypeTXT)
	c.Advance(50 * time.Second)
	if got := receive(2); got.Auth.DKIM != "pass" || got.Auth.DMARC != "pass" || got.SpamVerdict != inbound.VerdictPass {
		t.Fatalf("within the minute: auth %+v, verdict %s; want the remembered key to pass", got.Auth, got.SpamVerdict)
	}
	c.Advance(11 * time.Second)
	if got := receive(3); got.Auth.DKIM != "fail" {
		t.Fatalf("after the minute: auth %+v; want the withdrawn key to fail", got.Auth)
	}
}
