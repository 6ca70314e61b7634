package bounce

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func load(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := map[string]Kind{
		"postfix_dsn.eml":   KindDSN,
		"exim_dsn.eml":      KindDSN,
		"gmail_dsn.eml":     KindDSN,
		"microsoft_dsn.eml": KindDSN,
		"yahoo_arf.eml":     KindARF,
		"aol_arf.eml":       KindARF,
		"plain_reply.eml":   KindOther,
	}
	for name, want := range tests {
		if got := Detect(load(t, name)); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if Detect(nil) != KindOther || Detect([]byte("garbage")) != KindOther {
		t.Error("garbage detected as a report")
	}
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file       string
		mta        string
		msgID      string
		rcpts      []DSNRecipient
		textPrefix string
	}{
		{
			file: "postfix_dsn.eml", mta: "mail.example.com", msgID: "<k7q2m1example@example.com>",
			rcpts: []DSNRecipient{{
				FinalRecipient: "nobody@dest.test", OriginalRecipient: "nobody@dest.test", Action: "failed", Status: "5.1.1",
				DiagnosticType: "smtp", DiagnosticCode: "550 5.1.1 <nobody@dest.test>: Recipient address rejected: User unknown in virtual mailbox table",
				RemoteMTA: "mx1.dest.test",
			}},
			textPrefix: "This is the mail system",
		},
		{
			file: "exim_dsn.eml", mta: "smtp.relay.test", msgID: "<exim-orig-42@example.com>",
			rcpts: []DSNRecipient{{
				FinalRecipient: "full.user@isp.test", Action: "failed", Status: "5.0.0",
				DiagnosticType: "smtp", DiagnosticCode: "552 5.2.2 Mailbox full", RemoteMTA: "mx.isp.test",
			}},
			textPrefix: "This message was created automatically",
		},
		{
			file: "gmail_dsn.eml", mta: "googlemail.com", msgID: "<gm-orig-7@example.com>",
			rcpts: []DSNRecipient{{
				FinalRecipient: "slow@busy.test", Action: "delayed", Status: "4.7.0",
				DiagnosticType: "smtp", DiagnosticCode: "421 4.7.0 Try again later, closing connection.",
				RemoteMTA: "mx.busy.test. (203.0.113.9, the server for the domain busy.test.)", LastAttemptDate: "Wed, 07 Jan 2026 12:00:00 -0800 (PST)",
			}},
			textPrefix: "** Message delayed **",
		},
		{
			file: "microsoft_dsn.eml", mta: "AM0PR01MB0001.eurprd01.prod.exchangelabs.com", msgID: "<ms-orig-9@example.com>",
			rcpts: []DSNRecipient{
				{
					FinalRecipient: "ghost@contoso.test", OriginalRecipient: "ghost@contoso.test", Action: "failed", Status: "5.1.10",
					DiagnosticType: "smtp", DiagnosticCode: "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient ghost@contoso.test not found by SMTP address lookup",
				},
				{
					FinalRecipient: "second@contoso.test", Action: "failed", Status: "5.7.1",
					DiagnosticType: "smtp", DiagnosticCode: "550 5.7.1 RESOLVER.RST.AuthRequired; authentication required",
				},
			},
			textPrefix: "Your message to ghost@contoso.test",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := load(t, tt.file)
			for _, variant := range map[string][]byte{"crlf": raw, "lf": bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))} {
				d, err := ParseDSN(variant)
				if err != nil {
					t.Fatal(err)
				}
				if d.ReportingMTA != tt.mta || d.OriginalMessageID != tt.msgID {
					t.Errorf("mta %q msgid %q", d.ReportingMTA, d.OriginalMessageID)
				}
				if !reflect.DeepEqual(d.Recipients, tt.rcpts) {
					t.Errorf("recipients\n got %+v\nwant %+v", d.Recipients, tt.rcpts)
				}
				if !strings.HasPrefix(d.HumanReadable, tt.textPrefix) {
					t.Errorf("text %q", d.HumanReadable)
				}
				if d.OriginalHeaders.Get("From") != "Acme <hello@example.com>" {
					t.Errorf("original From %q", d.OriginalHeaders.Get("From"))
				}
			}
		})
	}
}

func TestDSNRecipientHelpers(t *testing.T) {
	t.Parallel()
	d, err := ParseDSN(load(t, "gmail_dsn.eml"))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Recipients[0]
	if r.SMTPCode() != 421 || r.Failed() {
		t.Errorf("code %d failed %v", r.SMTPCode(), r.Failed())
	}
	if (DSNRecipient{DiagnosticType: "x-unix", DiagnosticCode: "550 no"}).SMTPCode() != 0 {
		t.Error("non-smtp diagnostic gave a code")
	}
}

func TestParseARF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want ARF
	}{
		{"yahoo_arf.eml", ARF{
			FeedbackType: "abuse", UserAgent: "Yahoo!-Mail-Feedback/2.0", Version: "0.1",
			OriginalMailFrom: "bounces+em_arf01@mail.example.com", OriginalRcptTo: []string{"reader@yahoo.test"},
			ArrivalDate: "Fri, 9 Jan 2026 13:55:00 +0000", ReportedDomain: []string{"example.com"}, SourceIP: "192.0.2.10",
			OriginalMessageID: "<arf-orig-3@example.com>",
		}},
		{"aol_arf.eml", ARF{
			FeedbackType: "abuse", UserAgent: "AOL SComp", Version: "1",
			OriginalMailFrom: "bounces+em_aol01@mail.example.com", OriginalRcptTo: []string{"redacted@aol.test", "second@aol.test"},
			ArrivalDate: "Sat, 10 Jan 2026 16:15:00 -0500", ReportedDomain: []string{"example.com"}, SourceIP: "192.0.2.11",
			OriginalMessageID: "<arf-orig-4@example.com>",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			a, err := ParseARF(load(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if a.OriginalHeaders.Get("Subject") == "" || !strings.HasPrefix(a.HumanReadable, "This is an email abuse report") {
				t.Errorf("headers %v text %q", a.OriginalHeaders, a.HumanReadable)
			}
			a.OriginalHeaders, a.HumanReadable = nil, ""
			if !reflect.DeepEqual(*a, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", *a, tt.want)
			}
		})
	}
}

func TestParseWrongKind(t *testing.T) {
	t.Parallel()
	if _, err := ParseDSN(load(t, "yahoo_arf.eml")); err == nil {
		t.Error("ARF parsed as DSN")
	}
	if _, err := ParseARF(load(t, "postfix_dsn.eml")); err == nil {
		t.Error("DSN parsed as ARF")
	}
	for _, raw := range [][]byte{nil, []byte("x"), load(t, "plain_reply.eml"),
		[]byte("Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--\r\n")} {
		if _, err := ParseDSN(raw); err == nil {
			t.Errorf("parsed %q", raw)
		}
		if _, err := ParseARF(raw); err == nil {
			t.Errorf("parsed %q", raw)
		}
	}
}

func seed(f *testing.F) {
	entries, _ := os.ReadDir("testdata")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".eml") {
			b, _ := os.ReadFile(filepath.Join("testdata", e.Name()))
			f.Add(b)
		}
	}
}

func FuzzParseDSN(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := ParseDSN(raw)
		if err == nil && len(d.Recipients) == 0 {
			t.Fatal("DSN without recipients")
		}
		_ = Detect(raw)
	})
}

func FuzzParseARF(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseARF(raw)
		if err == nil && a.FeedbackType == "" {
			t.Fatal("ARF without feedback type")
		}
	})
}
