package outbound

import (
	"bytes"
	"crypto"
	"mime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/emersion/go-msgauth/dkim"
)

// dkimResult verifies raw's one signature against pub and returns its error
// (nil when it verifies).
func dkimResult(t *testing.T, raw []byte, pub crypto.PublicKey) error {
	t.Helper()
	rec, err := DKIMPublicRecord(pub)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
		LookupTXT: func(string) ([]string, error) { return []string{rec}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d signatures", len(vs))
	}
	return vs[0].Err
}

func marketingMessage() *Message {
	m := sampleMessage()
	m.Headers = map[string]string{
		"List-Unsubscribe":      "<https://mailroom.test/u/abc>, <mailto:unsub+abc@mailroom.test>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"List-Id":               "Spring news <news.example.com>",
	}
	m.FeedbackID = FeedbackID("ws_1", "marketing", "mailroom.test")
	return m
}

// TestDKIMCoversListAndOverSigns: the unsubscribe, list and feedback
// headers are signed when present, the identity headers are over-signed,
// and changing or adding any of them breaks the signature, as a receiver's
// verifier (go-msgauth here) sees it.
func TestDKIMCoversListAndOverSigns(t *testing.T) {
	t.Parallel()
	key := testRSAKey(t)
	raw, err := Build(marketingMessage())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := NewSigner("example.com", "mr1", key).Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := dkimResult(t, signed, key.Public()); err != nil {
		t.Fatalf("untouched message does not verify: %v", err)
	}
	sig := string(bytes.ReplaceAll(signed[:bytes.Index(signed, []byte("\r\n\r\n"))], []byte("\r\n "), nil))
	for _, want := range []string{"From:From:", "Subject:Subject:", "Date:Date:", "To:To:", "Message-ID:Message-ID:",
		"List-Unsubscribe:List-Unsubscribe-Post:List-Id:Feedback-ID:", "Reply-To:Reply-To:Cc:Cc:", "Content-Type"} {
		if !strings.Contains(sig, want) {
			t.Errorf("h= lacks %q: %s", want, sig[:strings.Index(sig, "\r\n")])
		}
	}
	if !bytes.Contains(signed, []byte("\r\nFeedback-Id: ws_1:marketing:mailroom.test\r\n")) && !bytes.Contains(signed, []byte("\r\nFeedback-ID: ws_1:marketing:mailroom.test\r\n")) {
		t.Errorf("no Feedback-ID header:\n%s", signed)
	}

	body := bytes.Index(signed, []byte("\r\n\r\n"))
	cases := map[string]func([]byte) []byte{
		"List-Unsubscribe altered": func(b []byte) []byte {
			return bytes.Replace(b, []byte("https://mailroom.test/u/abc"), []byte("https://evil.test/u/abc"), 1)
		},
		"List-Unsubscribe-Post removed": func(b []byte) []byte {
			return bytes.Replace(b, []byte("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"), nil, 1)
		},
		"Feedback-ID altered": func(b []byte) []byte { return bytes.Replace(b, []byte("ws_1:marketing"), []byte("ws_2:marketing"), 1) },
		"second From added":   func(b []byte) []byte { return insertHeader(b, body, "From: CEO <ceo@example.com>") },
		"second Subject added": func(b []byte) []byte {
			return insertHeader(b, body, "Subject: Urgent: wire transfer")
		},
		"second To added":         func(b []byte) []byte { return insertHeader(b, body, "To: victim@dest.test") },
		"second Message-ID added": func(b []byte) []byte { return insertHeader(b, body, "Message-ID: <x@y>") },
	}
	for name, alter := range cases {
		t.Run(name, func(t *testing.T) {
			if err := dkimResult(t, alter(bytes.Clone(signed)), key.Public()); err == nil {
				t.Fatal("altered message still verifies")
			}
		})
	}
}

// insertHeader puts a field just before the end of the header (at end, the
// index of the blank line), where a forger would add it.
func insertHeader(b []byte, end int, field string) []byte {
	out := append([]byte{}, b[:end]...)
	out = append(out, "\r\n"+field...)
	return append(out, b[end:]...)
}

// TestDKIMSignsOnlyPresent: absent optional fields are not named in h=
// (only the over-signed ones are), so an ordinary relay adding, say, a
// List-Id does not break the signature of a transactional message; an
// absent Reply-To or Cc is signed as absent, so adding one does.
func TestDKIMSignsOnlyPresent(t *testing.T) {
	t.Parallel()
	m := sampleMessage()
	m.Cc, m.ReplyTo, m.Headers = nil, nil, nil
	raw, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	keys := headerKeys(raw)
	got := strings.Join(keys, ":")
	if want := "From:From:Subject:Subject:Date:Date:To:To:Message-ID:Message-ID:Reply-To:Cc:MIME-Version:Content-Type"; got != want {
		t.Fatalf("h = %s, want %s", got, want)
	}
	key := testRSAKey(t)
	signed, err := NewSigner("example.com", "mr1", key).Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Index(signed, []byte("\r\n\r\n"))
	if err := dkimResult(t, insertHeader(signed, body, "List-Id: <news.example.com>"), key.Public()); err != nil {
		t.Errorf("a relay's List-Id broke the signature: %v", err)
	}
	for _, field := range []string{"Reply-To: thief@evil.test", "Cc: thief@evil.test"} {
		if err := dkimResult(t, insertHeader(signed, body, field), key.Public()); err == nil {
			t.Errorf("adding %q kept the signature valid", field)
		}
	}
}

// TestEncodedWordsFolded: every header line stays within 76 characters,
// each encoded word on its own line, and a reader decodes the original.
func TestEncodedWordsFolded(t *testing.T) {
	t.Parallel()
	for _, subj := range []string{
		"Grüße aus Köln ✓",
		strings.Repeat("Grüße und Küsse aus München ", 9),
		strings.Repeat("日本語のお知らせ", 12),
		"plain ascii but contains =?utf-8?q?x?= lookalike",
		strings.Repeat("x", 10) + "é" + strings.Repeat("y", 200),
	} {
		m := sampleMessage()
		m.Subject = subj
		m.From.Name = strings.Repeat("Zoë ", 25)
		m.To = []Address{{Name: "Ärger Ölbaum", Address: "a@dest.test"}, {Name: "Bob", Address: "b@dest.test"}, {Name: strings.Repeat("Ü", 40), Address: "c@dest.test"}}
		raw, err := Build(m)
		if err != nil {
			t.Fatal(err)
		}
		head := string(raw[:bytes.Index(raw, []byte("\r\n\r\n"))])
		for _, line := range strings.Split(head, "\r\n") {
			if len(line) > 76 {
				t.Errorf("line of %d characters: %q", len(line), line)
			}
			if strings.Count(line, "=?utf-8?") > 1 {
				t.Errorf("two encoded words on one line: %q", line)
			}
		}
		p := parse(t, raw)
		if got, _ := p.header.Subject(); got != subj {
			t.Errorf("subject round trip: %q != %q", got, subj)
		}
		from, err := p.header.AddressList("From")
		if err != nil || len(from) != 1 || from[0].Name != m.From.Name {
			t.Errorf("from round trip: %v %v", from, err)
		}
		to, err := p.header.AddressList("To")
		if err != nil || len(to) != 3 || to[0].Name != "Ärger Ölbaum" || to[2].Name != strings.Repeat("Ü", 40) {
			t.Errorf("to round trip: %v %v", to, err)
		}
	}
}

// TestAttachmentFilenameRFC2231: a non-ASCII (and a long) file name is
// written in RFC 2231 extended form with continuations, never as an
// encoded word inside quotes, and parsers (Go's mime, go-message) read the
// name back.
func TestAttachmentFilenameRFC2231(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"Prüfbericht für März – überall sehr lange Dateinamen, die nie enden wollen.pdf",
		"résumé.pdf",
		"日本語.txt",
		"plain.pdf",
		"with \"quote\".txt",
	} {
		m := sampleMessage()
		m.Attachments = []Attachment{{Filename: name, Data: []byte("x")}}
		raw, err := Build(m)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(`filename="=?`)) || bytes.Contains(raw, []byte(`name="=?`)) {
			t.Errorf("%q: encoded word in a parameter:\n%s", name, raw)
		}
		for _, line := range strings.Split(string(raw), "\r\n") {
			if strings.Contains(line, "name") && len(line) > 76 {
				t.Errorf("%q: line of %d: %q", name, len(line), line)
			}
		}
		p := parse(t, raw)
		if _, ok := p.attachments[name]; !ok {
			t.Errorf("%q: parsed names %v", name, keysOf(p.attachments))
		}
		i := bytes.Index(raw, []byte("Content-Disposition: attachment"))
		end := bytes.Index(raw[i:], []byte("\r\nContent-"))
		if end < 0 {
			end = bytes.Index(raw[i:], []byte("\r\n\r\n"))
		}
		v := strings.ReplaceAll(string(raw[i+len("Content-Disposition: "):i+end]), "\r\n", "")
		_, params, err := mime.ParseMediaType(v)
		if err != nil || params["filename"] != name {
			t.Errorf("%q: Go mime reads %q (%v) from %q", name, params["filename"], err, v)
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFeedbackID(t *testing.T) {
	if got := FeedbackID("ws:1", "transactional", "mail room.test"); got != "ws1:transactional:mailroom.test" {
		t.Fatal(got)
	}
}

// FuzzEncodedWords: any subject (valid UTF-8, no CR or LF, as the sending
// API admits) yields header lines within 76 characters that decode back to
// the subject.
func FuzzEncodedWords(f *testing.F) {
	f.Add("Grüße aus Köln ✓")
	f.Add(strings.Repeat("日本語", 40))
	f.Add("=?utf-8?q?x?=")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\r\n") || !needsEncoding(s) {
			return
		}
		v := encodedWords("Subject", s)
		for i, line := range strings.Split("Subject: "+v, "\r\n") {
			if len(line) > 76 {
				t.Fatalf("line %d has %d characters: %q", i, len(line), line)
			}
		}
		got, err := new(mime.WordDecoder).DecodeHeader(strings.ReplaceAll(v, "\r\n ", " "))
		if err != nil || got != s {
			t.Fatalf("decoded %q (%v), want %q", got, err, s)
		}
	})
}
