package outbound

import (
	"bytes"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message/mail"
)

// TestBuildInlineBytes holds Build's direct writer of text and
// text+HTML messages to the bytes go-message wrote for them before it
// (referenceBuild, a copy of Build as it was), the boundary aside, over
// bodies that are 7bit and quoted-printable, with lines at and over the
// 998-octet limit, and with extra header fields.
func TestBuildInlineBytes(t *testing.T) {
	line998, line999 := strings.Repeat("x", 998), strings.Repeat("y", 999)
	bodies := []struct{ text, html string }{
		{"plain ascii\nsecond line\n", ""},
		{"no final newline", ""},
		{"caf\u00e9 na\u00efve \u2014 quoted-printable\n", ""},
		{line998 + "\n" + line998, ""},
		{line999, ""},
		{"trailing space \nand\ttab\n\n\n", ""},
		{"", "<p>Hello</p>"},
		{"", benchHTML()},
		{"own text", "<p>caf\u00e9</p>"},
		{"caf\u00e9", "<p>plain</p>\n<p>two</p>"},
		{"", "<p>" + line998 + "</p>\n" + line999},
		{"crlf\r\nand lone\rcr", ".\n.\r\n.."},
		{line998 + "\r\n\r\n\n" + line998 + "\r\n", "<p>\r\n" + line998 + "\r\n</p>\r"},
		{"text = with equals", "<a href=\"https://x.test/?a=1&amp;b=2\">x</a>"},
	}
	for _, b := range bodies {
		for _, extra := range []bool{false, true} {
			m := &Message{
				From:      Address{Name: "S\u00e9nder", Address: "a@example.test"},
				To:        []Address{{Address: "b@example.test"}, {Name: "Long Name For Folding Purposes Here", Address: "c@example.test"}},
				Subject:   "News for Ada \u2014 " + strings.Repeat("long subject ", 6),
				Text:      b.text,
				HTML:      b.html,
				MessageID: "<fixed-id@example.test>",
				Date:      time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC),
			}
			if extra {
				m.Cc = []Address{{Address: "d@example.test"}}
				m.ReplyTo = []Address{{Address: "r@example.test"}}
				m.FeedbackID = "w:marketing:s"
				m.Headers = map[string]string{"List-Unsubscribe": "<https://x.test/u/" + strings.Repeat("t", 80) + ">", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click", "X-Entity-Ref-ID": "e1"}
			}
			checkInlineBytes(t, m)
		}
	}
}

// FuzzBuildInlineBytes: TestBuildInlineBytes over any bodies.
func FuzzBuildInlineBytes(f *testing.F) {
	f.Add("plain\nlines\n", "<p>x=y</p>")
	f.Add("Grüße\r\n", "a\rb")
	f.Add(strings.Repeat("z", 1200), ".\n.\r\n..")
	// writeSevenBit's plain ASCII path: lines at and over the limit, last
	// or not, with and without a final newline.
	f.Add("a\n"+strings.Repeat("b", 998)+"\n", "<p>\n"+strings.Repeat("c", 999)+"\n</p>")
	f.Add(strings.Repeat("d", 998), "x\n"+strings.Repeat("e", 999))
	f.Add("\n\n", "<p>only\n\nlines</p>\n")
	f.Fuzz(func(t *testing.T, text, html string) {
		if !utf8.ValidString(text) || !utf8.ValidString(html) || strings.ContainsRune(text+html, 0) || text+html == "" {
			return // the API accepts only valid UTF-8 without NUL
		}
		checkInlineBytes(t, &Message{From: Address{Address: "a@x.test"}, To: []Address{{Address: "b@y.test"}}, Subject: "s",
			HTML: html, Text: text, MessageID: "<m@x.test>", Date: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)})
	})
}

// checkInlineBytes builds m both ways, the boundary fixed.
func checkInlineBytes(t *testing.T, m *Message) {
	t.Helper()
	const boundary = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
	mimeBoundary = func() string { return boundary }
	defer func() { mimeBoundary = randomBoundary }()
	want, err := referenceBuild(m)
	if err != nil {
		t.Fatal(err)
	}
	if old := oldBoundary.FindSubmatch(want); old != nil {
		want = bytes.ReplaceAll(want, old[1], []byte(boundary))
	}
	got, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("text %.40q html %.40q:\n got %q\nwant %q", m.Text, m.HTML, got, want)
	}
}

var oldBoundary = regexp.MustCompile(`boundary=([0-9a-f]{60})`)

func referenceBuild(m *Message) ([]byte, error) {
	if err := validate(m); err != nil {
		return nil, err
	}
	h, err := header(m)
	if err != nil {
		return nil, err
	}
	text := m.Text
	if text == "" && m.HTML != "" {
		text = HTMLToText(m.HTML)
	}
	var buf bytes.Buffer
	buf.Grow(len(m.HTML) + 2*len(text) + 1024 + attachmentsSize(m.Attachments))
	if inline, files := splitInline(m); len(inline) > 0 {
		if err := buildRelated(&buf, h, text, m.HTML, inline, files); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	if len(m.Attachments) == 0 {
		if m.HTML == "" {
			w, err := mail.CreateSingleInlineWriter(&buf, referenceWithTextType(h, text))
			if err != nil {
				return nil, err
			}
			if err := writeClose(w, text); err != nil {
				return nil, err
			}
			return buf.Bytes(), nil
		}
		iw, err := mail.CreateInlineWriter(&buf, h)
		if err != nil {
			return nil, err
		}
		if err := writeAlternatives(iw, text, m.HTML); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}

	mw, err := mail.CreateWriter(&buf, h)
	if err != nil {
		return nil, err
	}
	if m.HTML == "" {
		w, err := mw.CreateSingleInline(textPart("text/plain", text))
		if err != nil {
			return nil, err
		}
		if err := writeClose(w, text); err != nil {
			return nil, err
		}
	} else {
		iw, err := mw.CreateInline()
		if err != nil {
			return nil, err
		}
		if err := writeAlternatives(iw, text, m.HTML); err != nil {
			return nil, err
		}
	}
	for _, a := range m.Attachments {
		if err := writeAttachment(mw, a); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// referenceWithTextType is h for a message that is one text/plain part, body.
func referenceWithTextType(h mail.Header, body string) mail.Header {
	h = h.Copy()
	setText(&h.Header, "text/plain", body)
	return h
}

// TestAppendBuildReusesBuffer: AppendBuild writes into dst's room (no
// new buffer) after what dst holds, the same bytes as Build.
func TestAppendBuildReusesBuffer(t *testing.T) {
	mimeBoundary = func() string { return "b" }
	t.Cleanup(func() { mimeBoundary = randomBoundary })
	m := sampleMessage()
	m.HTML, m.Attachments = benchHTML(), nil // go-message's own boundaries are random
	want, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	buf := append(make([]byte, 0, 128<<10), "prefix"...)
	got, err := AppendBuild(buf, m)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &buf[0] {
		t.Error("AppendBuild allocated a new buffer though dst had room")
	}
	if string(got) != "prefix"+string(want) {
		t.Errorf("AppendBuild = %.200q, want prefix then %.200q", got, want)
	}
}

// TestAppendBuildReusesItsScratch: a message whose text part is derived
// from its html, built into a reused buffer, allocates less than the html's
// size (the scanner's copy of the html and the text are reused buffers; a
// new one each was a large share of a broadcast's allocations), and is the
// same message each time.
func TestAppendBuildReusesItsScratch(t *testing.T) {
	mimeBoundary = func() string { return "b" }
	t.Cleanup(func() { mimeBoundary = randomBoundary })
	m := sampleMessage()
	m.HTML, m.Text, m.Attachments, m.MessageID = benchHTML(), "", nil, "<fixed@x.test>"
	want, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 50 {
		if buf, err = AppendBuild(buf[:0], m); err != nil || !bytes.Equal(buf, want) {
			t.Fatalf("AppendBuild into a reused buffer: %v, %.200q, want %.200q", err, buf, want)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 50; per > uint64(len(m.HTML)) {
		t.Fatalf("AppendBuild allocated %d bytes per message of %d bytes of html", per, len(m.HTML))
	}
}

// FuzzPlainASCII holds plainASCII, writeSevenBit's fast check, to
// sevenBit.
func FuzzPlainASCII(f *testing.F) {
	for _, s := range []string{"", "a", strings.Repeat("abcdefgh", 9), strings.Repeat("x", 40) + "\x80", strings.Repeat("y", 31) + "\r",
		"\x00" + strings.Repeat("z", 40), strings.Repeat("w", 64) + "\xff", "caf\u00e9", strings.Repeat("\x7f", 33)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if plainASCII(s) != sevenBit(s) {
			t.Fatalf("plainASCII(%q) = %v, sevenBit %v", s, plainASCII(s), sevenBit(s))
		}
	})
}
