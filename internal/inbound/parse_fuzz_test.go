package inbound

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// FuzzParse: any bytes parse without a panic into text both databases
// store (valid UTF-8, no NUL) and filenames that are never paths; parsed
// without the parts' bytes (receiving, which measures base64 attachments
// instead of decoding them), the same message in every other respect.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"Subject: hi\r\n\r\nbody",
		"From: A <a@b.c>\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain; charset=koi8-r\r\n\r\n\xf0\xf2\r\n--x\r\nContent-Disposition: attachment; filename*=UTF-8''..%2F..%2Fa\r\n\r\nz\r\n--x--\r\n",
		"Subject: =?utf-8?b?w6k=?=\nContent-Type: text/html\n\n<p>x</p>",
		"Content-Type: multipart/alternative; boundary=\"\"\r\n\r\n--\r\n",
		"\x00\xff: \xfe\r\n\r\n",
		"Content-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nx",
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: application/pdf; name=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBE\r\nRi0x\r\nLg==\r\n--b\r\nContent-Transfer-Encoding: BASE64\r\nContent-Disposition: attachment\r\n\r\nQU\tJD RA=\r\n--b\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\nQQ==QQ\r\n--b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\naGk=\r\n--b--\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := Parse(raw)
		if err != nil {
			return
		}
		check := func(what, s string) {
			if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("%s %q is not storable", what, s)
			}
		}
		check("subject", p.Subject)
		check("from", p.FromAddr+p.FromName)
		if p.Text != nil {
			check("text", *p.Text)
		}
		if p.HTML != nil {
			check("html", *p.HTML)
		}
		for k, v := range p.Headers {
			check("header", k+v)
		}
		seen := map[string]bool{}
		for _, pt := range p.Parts {
			if pt.Filename == "" || strings.ContainsAny(pt.Filename, "/\\\x00") || pt.Filename == ".." || seen[pt.Filename] {
				t.Fatalf("filename %q", pt.Filename)
			}
			seen[pt.Filename] = true
			check("filename", pt.Filename)
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatal(err)
		}
		q, err := parse(raw, false)
		if err != nil {
			t.Fatalf("parsed with data, not without: %v", err)
		}
		for i := range p.Parts {
			if len(p.Parts[i].Data) != p.Parts[i].Size {
				t.Fatalf("part %q: size %d, %d bytes", p.Parts[i].Filename, p.Parts[i].Size, len(p.Parts[i].Data))
			}
			p.Parts[i].Data = nil
		}
		a, _ := json.Marshal(p)
		b, _ := json.Marshal(q)
		if string(a) != string(b) {
			t.Fatalf("with data:\n%s\nwithout:\n%s", a, b)
		}
	})
}

// FuzzBase64Size: when base64Size answers, it is the length go-message's
// decoder gives, for any bytes.
func FuzzBase64Size(f *testing.F) {
	for _, s := range []string{"", "QQ==", "QUI=", "QUJD", "QU\r\nJD\r\n", "QQ=\r\n=", "Q=Q=", "QQ", "QUJD RA==\t", "QQ==QQ==", "====", "\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := base64Size(b)
		if !ok {
			return
		}
		var h textproto.Header
		h.Set("Content-Transfer-Encoding", "base64")
		e, err := message.New(message.Header{Header: h}, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(e.Body)
		if err != nil || len(got) != n {
			t.Fatalf("%q: base64Size %d, decoded %d bytes (%v)", b, n, len(got), err)
		}
	})
}
