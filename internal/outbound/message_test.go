package outbound

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message/mail"
)

func sampleMessage() *Message {
	return &Message{
		From:    Address{Name: "Ünïcode Sender", Address: "sender@example.com"},
		To:      []Address{{Name: "Alice", Address: "alice@dest.test"}},
		Cc:      []Address{{Address: "carol@dest.test"}},
		Bcc:     []Address{{Address: "secret@dest.test"}},
		ReplyTo: []Address{{Address: "reply@example.com"}},
		Subject: "Grüße aus Köln ✓",
		HTML:    `<html><head><style>p{}</style></head><body><p>Hello <b>World</b></p><a href="https://x.test/a">click</a></body></html>`,
		Text:    "Hello World",
		Headers: map[string]string{"In-Reply-To": "<parent@example.com>", "X-Entity": "abc"},
		Attachments: []Attachment{
			{Filename: "report.pdf", Data: []byte("%PDF-1.4 fake pdf \x00\x01\x02 bytes")},
			{Filename: "notes", Data: []byte("plain words")},
		},
		MessageID: "<abc123@example.com>",
		Date:      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// parsed is what a receiving client would see.
type parsed struct {
	header      mail.Header
	texts       map[string]string // content type -> body
	attachments map[string][]byte // filename -> bytes
	attTypes    map[string]string
}

func parse(t *testing.T, raw []byte) parsed {
	t.Helper()
	r, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, raw)
	}
	p := parsed{header: r.Header, texts: map[string]string{}, attachments: map[string][]byte{}, attTypes: map[string]string{}}
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		b, _ := io.ReadAll(part.Body)
		switch h := part.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := h.ContentType()
			p.texts[ct] = string(b)
		case *mail.AttachmentHeader:
			name, _ := h.Filename()
			ct, _, _ := h.ContentType()
			p.attachments[name] = b
			p.attTypes[name] = ct
		}
	}
	return p
}

func TestBuildStructure(t *testing.T) {
	t.Parallel()
	m := sampleMessage()
	raw, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	// No Bcc field and no Bcc address anywhere. (Not "bcc" anywhere: the
	// random MIME boundaries contain it now and then.)
	lower := bytes.ToLower(raw)
	if bytes.HasPrefix(lower, []byte("bcc:")) || bytes.Contains(lower, []byte("\nbcc:")) || bytes.Contains(raw, []byte("secret@")) {
		t.Fatalf("Bcc leaked:\n%s", raw)
	}
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Fatal("bare LF in output")
	}
	p := parse(t, raw)
	if s, _ := p.header.Subject(); s != m.Subject {
		t.Errorf("subject %q", s)
	}
	if from, _ := p.header.AddressList("From"); len(from) != 1 || from[0].Name != m.From.Name {
		t.Errorf("from %v", from)
	}
	if id, _ := p.header.MessageID(); id != "abc123@example.com" {
		t.Errorf("message-id %q", id)
	}
	if d, _ := p.header.Date(); !d.Equal(m.Date) {
		t.Errorf("date %v", d)
	}
	for _, k := range []string{"To", "Cc", "Reply-To"} {
		if l, _ := p.header.AddressList(k); len(l) != 1 {
			t.Errorf("%s: %v", k, l)
		}
	}
	if got := p.header.Get("In-Reply-To"); got != "<parent@example.com>" {
		t.Errorf("In-Reply-To %q", got)
	}
	if p.texts["text/plain"] != "Hello World" || !strings.Contains(p.texts["text/html"], "<b>World</b>") {
		t.Errorf("texts %v", p.texts)
	}
	if got := p.attachments["report.pdf"]; !bytes.Equal(got, m.Attachments[0].Data) || p.attTypes["report.pdf"] != "application/pdf" {
		t.Errorf("pdf %q %q", got, p.attTypes["report.pdf"])
	}
	if p.attTypes["notes"] != "text/plain" {
		t.Errorf("sniffed type %q", p.attTypes["notes"])
	}
	if !strings.Contains(string(raw), "multipart/mixed") || !strings.Contains(string(raw), "multipart/alternative") {
		t.Error("missing multipart structure")
	}
}

func TestBuildShapes(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() *Message {
		return &Message{From: Address{Address: "a@x.test"}, To: []Address{{Address: "b@y.test"}}, Subject: "s", Date: date}
	}
	tests := []struct {
		name     string
		edit     func(*Message)
		wantType string
		wantText string
	}{
		{"text only", func(m *Message) { m.Text = "just text" }, "text/plain", "just text"},
		{"html only derives text", func(m *Message) {
			m.HTML = "<p>Hi <i>there</i>,</p><ul><li>one</li><li>two</li></ul><a href='https://e.test'>site</a><script>x()</script>"
		}, "multipart/alternative", "Hi there,\n\n- one\n- two\n\nsite <https://e.test>"},
		{"no body", func(m *Message) {}, "text/plain", ""},
		{"text with attachment", func(m *Message) {
			m.Text = "t"
			m.Attachments = []Attachment{{Filename: "a.png", ContentType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}
		}, "multipart/mixed", "t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.edit(m)
			raw, err := Build(m)
			if err != nil {
				t.Fatal(err)
			}
			p := parse(t, raw)
			ct, _, _ := mime.ParseMediaType(p.header.Get("Content-Type"))
			if ct != tt.wantType {
				t.Errorf("content type %q, want %q", ct, tt.wantType)
			}
			if got := strings.ReplaceAll(p.texts["text/plain"], "\r\n", "\n"); got != tt.wantText {
				t.Errorf("text %q, want %q", got, tt.wantText)
			}
			if id, _ := p.header.MessageID(); !strings.HasSuffix(id, "@x.test") {
				t.Errorf("generated message id %q", id)
			}
		})
	}
}

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Message)
	}{
		{"CRLF in subject", func(m *Message) { m.Subject = "hi\r\nBcc: x@y" }},
		{"LF in header value", func(m *Message) { m.Headers = map[string]string{"X-A": "a\nB: c"} }},
		{"CR in name", func(m *Message) { m.To[0].Name = "a\rb" }},
		{"bad header name", func(m *Message) { m.Headers = map[string]string{"X A": "v"} }},
		{"reserved header", func(m *Message) { m.Headers = map[string]string{"from": "v"} }},
		{"no date", func(m *Message) { m.Date = time.Time{} }},
		{"no from", func(m *Message) { m.From.Address = "" }},
		{"no recipients", func(m *Message) { m.To = nil; m.Cc = nil; m.Bcc = nil }},
		{"CRLF in filename", func(m *Message) { m.Attachments[0].Filename = "a\r\n.pdf" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleMessage()
			tt.edit(m)
			if _, err := Build(m); err == nil {
				t.Fatal("accepted")
			} else if strings.Contains(tt.name, "CR") && !errors.Is(err, ErrHeaderInjection) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestNewMessageID(t *testing.T) {
	t.Parallel()
	a, b := NewMessageID("example.com"), NewMessageID("example.com")
	if a == b || !strings.HasPrefix(a, "<") || !strings.HasSuffix(a, "@example.com>") {
		t.Fatalf("%q %q", a, b)
	}
}

func BenchmarkBuild(b *testing.B) {
	m := sampleMessage()
	m.HTML = strings.Repeat("<p>Some <b>marketing</b> copy with a <a href='https://x.test'>link</a>.</p>", 100)
	m.Text = ""
	for b.Loop() {
		if _, err := Build(m); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzHTMLToText(f *testing.F) {
	for _, s := range []string{"<p>a<b>b</b></p>", "<a href='x'>y</a>", "<script>", "<li><li><br/>", "</a></a>&amp;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := HTMLToText(s)
		if strings.ContainsRune(out, '<') && !strings.Contains(s, "<") && !strings.Contains(s, "&") {
			t.Fatalf("invented markup from %q: %q", s, out)
		}
	})
}

func TestEmailIDOf(t *testing.T) {
	for _, tc := range []struct {
		in, id string
		ok     bool
	}{
		{MessageIDFor("em_01abc", "acme.test"), "em_01abc", true},
		{MessageIDFor("em_01abc", ""), "em_01abc", true},
		{"<a@b@c.test>", "a@b", true}, // the stored Message-ID decides; this one matches no row
		{"em_01abc@acme.test", "", false},
		{"<@acme.test>", "", false},
		{"<em_01abc>", "", false},
		{"<>", "", false},
		{"", "", false},
	} {
		id, ok := EmailIDOf(tc.in)
		if id != tc.id || ok != tc.ok {
			t.Errorf("EmailIDOf(%q) = %q, %v; want %q, %v", tc.in, id, ok, tc.id, tc.ok)
		}
	}
}

func TestTransferEncoding(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 998)
	for _, tt := range []struct {
		body, want string
	}{
		{"", "7bit"},
		{"<p>Hello</p>\n<p>a=b</p>\r\n", "7bit"},
		{long + "\n" + long, "7bit"},
		{long + "a", "quoted-printable"},
		{"Grüße", "quoted-printable"},
		{"a\x00b", "quoted-printable"},
		{"a\rb", "quoted-printable"},
		{"ends in CR\r", "quoted-printable"},
	} {
		if got := transferEncoding(tt.body); got != tt.want {
			t.Errorf("transferEncoding(%.20q…) = %s, want %s", tt.body, got, tt.want)
		}
	}
}

// An ASCII body goes as it is (7bit, CRLF line ends), anything else
// quoted-printable; either way a client reads back what was sent.
func TestBuildSevenBit(t *testing.T) {
	t.Parallel()
	html := strings.Repeat("<p class=\"x\">Lorem ipsum dolor sit amet.</p>\n", 100)
	raw, err := Build(&Message{From: Address{Address: "a@x.test"}, To: []Address{{Address: "b@y.test"}}, Subject: "s", HTML: html, Text: "Grüße\nline two", Date: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Fatal("bare LF in output")
	}
	if !bytes.Contains(raw, []byte("<p class=\"x\">Lorem ipsum dolor sit amet.</p>\r\n<p")) {
		t.Fatalf("html not sent as it is:\n%.600s", raw)
	}
	if !bytes.Contains(raw, []byte("Content-Transfer-Encoding: 7bit")) || !bytes.Contains(raw, []byte("Content-Transfer-Encoding: quoted-printable")) {
		t.Fatalf("want one 7bit and one quoted-printable part:\n%.600s", raw)
	}
	p := parse(t, raw)
	if got := p.texts["text/html"]; got != strings.ReplaceAll(html, "\n", "\r\n") {
		t.Errorf("html read back %.80q", got)
	}
	if got := p.texts["text/plain"]; got != "Grüße\r\nline two" {
		t.Errorf("text read back %q", got)
	}
}

// Whatever the bodies, a client reads back the same text (line ends as
// CRLF, a lone CR one too) and the message has no bare LF.
func FuzzBuildBodies(f *testing.F) {
	f.Add("plain\nlines\n", "<p>x=y</p>")
	f.Add("Grüße\r\n", "a\rb")
	f.Add(strings.Repeat("z", 1200), ".\n.\r\n..")
	f.Fuzz(func(t *testing.T, text, html string) {
		if !utf8.ValidString(text) || !utf8.ValidString(html) || strings.ContainsRune(text+html, 0) {
			return // the API accepts only valid UTF-8 without NUL
		}
		raw, err := Build(&Message{From: Address{Address: "a@x.test"}, To: []Address{{Address: "b@y.test"}}, Subject: "s", HTML: html, Text: text, Date: time.Now()})
		if err != nil {
			if html == "" && text == "" {
				return
			}
			t.Fatal(err)
		}
		if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
			t.Fatal("bare LF in output")
		}
		p := parse(t, raw)
		// A lone CR is a line end too (quoted-printable's writer makes it one).
		crlf := func(s string) string {
			return strings.NewReplacer("\r\n", "\r\n", "\r", "\r\n", "\n", "\r\n").Replace(s)
		}
		if text != "" {
			if got := p.texts["text/plain"]; got != crlf(text) {
				t.Errorf("text: sent %q, read %q", text, got)
			}
		}
		if html != "" {
			if got := p.texts["text/html"]; got != crlf(html) {
				t.Errorf("html: sent %q, read %q", html, got)
			}
		}
	})
}

// BenchmarkBuildBroadcast builds bench/broadcast's message: a 15 KB html
// body of short lines, the text derived from it.
func BenchmarkBuildBroadcast(b *testing.B) {
	m := &Message{From: Address{Name: "News", Address: "news@x.test"}, To: []Address{{Address: "m0000001@example.net"}}, Subject: "News for Name1",
		HTML: "<html><body><p>Hello Name1, news for City1 (pro plan).</p>" +
			strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 180) + "</body></html>",
		Date: time.Now()}
	for b.Loop() {
		if _, err := Build(m); err != nil {
			b.Fatal(err)
		}
	}
}
