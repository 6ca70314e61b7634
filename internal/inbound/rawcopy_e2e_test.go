package inbound_test

import (
	"bytes"
	"database/sql"
	"net"
	"strings"
	"testing"

	"mailroom/internal/inbound"
	"mailroom/internal/smtpin"
	"mailroom/internal/testkit/testapp"
)

// TestRawCopyBodiesCutOut: a received message's text and html bodies,
// stored in messages, are cut out of its raw copy where the copy holds
// them verbatim, and every read of the raw copy (the download, an
// attachment) gives the message back byte for byte, whatever its shape.
func TestRawCopyBodiesCutOut(t *testing.T) {
	a := testapp.Start(t)
	ctx := t.Context()
	mbs, err := a.Inbound().Mailboxes(ctx, a.WorkspaceID, "")
	if err != nil {
		t.Fatal(err)
	}
	m := &mbs[0]
	long := strings.Repeat("invoice meeting schedule café\r\n", 100)
	page := "<html><body>" + strings.Repeat("<p>invoice <b>meeting</b> café</p>\r\n", 100) + "</body></html>"
	alt := func(first, second string) string {
		return "From: a@x.example\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n--a\r\n" + first + "\r\n--a\r\n" + second + "\r\n--a--\r\n"
	}
	text8 := "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + long
	html8 := "Content-Type: text/html; charset=utf-8\r\n\r\n" + page
	htmlQP := "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + strings.ReplaceAll(page, "é", "=C3=A9")
	att := "--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"a.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n"
	cases := []struct {
		name, raw  string
		text, html bool // cut out
	}{
		{"8bit text and an attachment", "From: a@x.example\r\nSubject: s\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + long + "\r\n" + att, true, false},
		{"text alone", "From: a@x.example\r\nSubject: s\r\n\r\n" + long, true, false},
		{"text also in a header before it", "From: a@x.example\r\nX-Copy: " + strings.ReplaceAll(long, "\r\n", " ") + "\r\n\r\n" + long, true, false},
		{"short text", "From: a@x.example\r\nSubject: s\r\n\r\nhello\r\n", false, false},
		{"quoted-printable text", "From: a@x.example\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
			strings.ReplaceAll(long, "é", "=C3=A9"), false, false},
		{"NULs the stored text drops", "From: a@x.example\r\n\r\n" + strings.ReplaceAll(long, "café", "caf\x00"), false, false},
		{"an unreadable header, kept whole as the text", "From a@x.example no colon " + long + "\r\n", true, false},
		{"text then html", alt(text8, html8), true, true},
		{"html then text", alt(html8, text8), true, true},
		{"html alone", "From: a@x.example\r\nContent-Type: text/html\r\n\r\n" + page, false, true},
		{"quoted-printable html", alt(text8, htmlQP), true, false},
	}
	env := smtpin.Envelope{RemoteIP: net.ParseIP("127.0.0.1"), MailFrom: "a@x.example", Rcpt: m.Address}
	rd := inbound.Reader{WorkspaceID: a.WorkspaceID}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := a.Inbound().Receive(ctx, m, env, []byte(c.raw))
			if err != nil {
				t.Fatal(err)
			}
			var stored int
			var textAt, htmlAt sql.NullInt64
			if err := a.DB.QueryRow(ctx, `SELECT length(data), text_at, html_at FROM message_raw WHERE message_id = ?`, r.MessageID).Scan(&stored, &textAt, &htmlAt); err != nil {
				t.Fatal(err)
			}
			want := len(c.raw)
			if c.text {
				want -= len(long)
			}
			if c.html {
				want -= len(page)
			}
			if textAt.Valid != c.text || htmlAt.Valid != c.html || stored > want {
				t.Errorf("stored %d of %d bytes (want about %d), text_at %v, html_at %v; want cut text %v, html %v", stored, len(c.raw), want, textAt, htmlAt, c.text, c.html)
			}
			got, err := a.Inbound().Raw(ctx, rd, r.MessageID)
			if err != nil || !bytes.Equal(got, []byte(c.raw)) {
				t.Errorf("raw read back (%v):\n%q\nwant\n%q", err, got, c.raw)
			}
		})
	}
	r, err := a.Inbound().Receive(ctx, m, env, []byte(cases[0].raw))
	if err != nil {
		t.Fatal(err)
	}
	ct, data, err := a.Inbound().Attachment(ctx, rd, r.MessageID, "a.pdf")
	if err != nil || ct != "application/pdf" || string(data) != "%PDF-1.4\n" {
		t.Errorf("attachment out of the cut copy: %q %q %v", ct, data, err)
	}
}
