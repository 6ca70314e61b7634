package outbound

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"os/exec"
	"strings"
	"testing"

	"github.com/emersion/go-message"
)

// pyRead parses raw with Python's email package (policy=default, which
// records defects) and answers the subject, every part's file name and
// text, and the defects found anywhere; it skips when python3 is absent.
func pyRead(t *testing.T, raw []byte) (subject string, files []string, texts []string, defects []string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", `import email, json, sys
from email import policy
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
out = {"subject": str(m["Subject"]), "files": [], "texts": [], "defects": []}
for p in m.walk():
    out["defects"] += [type(d).__name__ for d in p.defects]
    for v in p.values():
        out["defects"] += [type(d).__name__ for d in getattr(v, "defects", ())]
    if p.get_filename():
        out["files"].append(p.get_filename())
    elif p.get_content_type() == "text/plain":
        out["texts"].append(p.get_content())
print(json.dumps(out))`)
	cmd.Stdin = bytes.NewReader(raw)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v %s", err, b)
	}
	var out struct {
		Subject string   `json:"subject"`
		Files   []string `json:"files"`
		Texts   []string `json:"texts"`
		Defects []string `json:"defects"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("python3 said %s", b)
	}
	return out.Subject, out.Files, out.Texts, out.Defects
}

// TestFilenameContinuations: a long non-ASCII file name is split into RFC
// 2231 continuations between characters, never inside one, so Python reads
// it back without defects and Go's mime parser reads the same name.
func TestFilenameContinuations(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		strings.Repeat("é", 80) + ".pdf",
		"Rechnung " + strings.Repeat("Größenübersicht ", 6) + "✓.pdf",
		strings.Repeat("日本語のファイル", 8) + ".txt",
		"a" + strings.Repeat("😀", 30) + ".png",
	} {
		m := sampleMessage()
		m.Attachments = []Attachment{{Filename: name, ContentType: "application/octet-stream", Data: []byte("x")}}
		raw, err := Build(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\r\n") {
			if strings.Contains(line, "name") && len(line) > 78 {
				t.Fatalf("line of %d: %q", len(line), line)
			}
		}
		if got := parse(t, raw).attachments; got[name] == nil {
			t.Fatalf("go-message read names %v, want %q", keys(got), name)
		}
		for _, field := range []string{"Content-Type", "Content-Disposition"} {
			v := headerOfPart(t, raw, field)
			_, params, err := mime.ParseMediaType(v)
			if err != nil || (params["name"] != name && params["filename"] != name) {
				t.Fatalf("mime.ParseMediaType(%s) = %v %v", field, params, err)
			}
		}
		_, files, _, defects := pyRead(t, raw)
		if len(files) != 1 || files[0] != name || len(defects) > 0 {
			t.Fatalf("python: files %q defects %v, want %q", files, defects, name)
		}
	}
}

// TestLongWordSubject: a subject of over 998 ASCII characters without a
// space is written as encoded words, since the header writer would split
// it with a space; it decodes back exactly, in Go and in Python.
func TestLongWordSubject(t *testing.T) {
	t.Parallel()
	for _, subject := range []string{
		strings.Repeat("abcdefghij", 120),
		"Short words then " + strings.Repeat("x", 1200) + " and more",
		strings.Repeat("y", 900), // fits in a line: left as it is
	} {
		m := sampleMessage()
		m.Subject = subject
		raw, err := Build(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > 998 {
				t.Fatalf("line of %d octets", len(line))
			}
		}
		if encoded := !bytes.Contains(raw, []byte("Subject: "+subject+"\r\n")); encoded != (len(subject) > 998) {
			t.Fatalf("a subject of %d characters encoded: %v", len(subject), encoded)
		}
		h := parse(t, raw).header
		got, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
		if err != nil || got != subject {
			t.Fatalf("Go decodes %d chars (%v), want %d", len(got), err, len(subject))
		}
		py, _, _, defects := pyRead(t, raw)
		if py != subject || len(defects) > 0 {
			t.Fatalf("Python decodes %d chars %q…, defects %v; want %d", len(py), py[:min(40, len(py))], defects, len(subject))
		}
	}
}

// TestLinkThenPunctuation: text derived from HTML keeps punctuation that
// follows a link attached to it; a word after a link keeps its space.
func TestLinkThenPunctuation(t *testing.T) {
	t.Parallel()
	for html, want := range map[string]string{
		`<p>See <a href="https://x.example/a">the guide</a>.</p>`:      "See the guide <https://x.example/a>.",
		`Read <a href="https://x.example/a">this</a>, then reply.`:     "Read this <https://x.example/a>, then reply.",
		`Ask <a href="mailto:help@x.example">us</a>!`:                  "Ask us!",
		`A <a href="https://x.example/a">link</a> here`:                "A link <https://x.example/a> here",
		`A <a href="https://x.example/a">link</a>word`:                 "A link <https://x.example/a> word",
		`Go to <a href="https://x.example/a">https://x.example/a</a>.`: "Go to https://x.example/a.",
		`(<a href="https://x.example/a">docs</a>) and <b>bold</b>.`:    "(docs <https://x.example/a>) and bold.",
	} {
		if got := HTMLToText(html); got != want {
			t.Errorf("HTMLToText(%q) = %q, want %q", html, got, want)
		}
	}
	m := sampleMessage()
	m.Text, m.Attachments = "", nil
	m.HTML = `<p>See <a href="https://x.example/a">the guide</a>.</p>`
	raw, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, texts, _ := pyRead(t, raw); len(texts) != 1 || strings.TrimSpace(texts[0]) != "See the guide <https://x.example/a>." {
		t.Fatalf("python reads the text part %q", texts)
	}
}

// headerOfPart is the unfolded value of field in the first part that has it.
func headerOfPart(t *testing.T, raw []byte, field string) string {
	t.Helper()
	for _, block := range strings.Split(string(raw), "\r\n--") {
		head, _, _ := strings.Cut(block, "\r\n\r\n")
		if !strings.Contains(head, "filename") && !strings.Contains(head, "name*") {
			continue
		}
		head = strings.ReplaceAll(head, "\r\n ", " ")
		for _, line := range strings.Split(head, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, field) {
				return strings.TrimSpace(v)
			}
		}
	}
	t.Fatalf("no %s with a file name in\n%s", field, raw)
	return ""
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestInlineImages: an attachment with a Content-ID that the html shows as
// cid: goes in multipart/related beside the alternative, inline with its
// Content-ID (the message's top part when there are no files); one the
// html does not show, or any without html, is an attachment.
func TestInlineImages(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\nfake")
	m := sampleMessage()
	m.HTML = `<p>Hi <img src="cid:logo@acme.example"></p>`
	m.Attachments = []Attachment{
		{Filename: "logo.png", Data: png, ContentID: "logo@acme.example"},
		{Filename: "unused.png", Data: png, ContentID: "unused@acme.example"},
	}
	raw, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var tree []string
	r.Walk(func(path []int, e *message.Entity, err error) error {
		ct, _, _ := e.Header.ContentType()
		disp, _, _ := e.Header.ContentDisposition()
		tree = append(tree, fmt.Sprint(path, ct, " ", disp, " ", e.Header.Get("Content-ID")))
		return err
	})
	want := []string{"[]multipart/mixed  ", "[0]multipart/related  ", "[0 0]multipart/alternative  ", "[0 0 0]text/plain inline ",
		"[0 0 1]text/html inline ", "[0 1]image/png inline <logo@acme.example>", "[1]image/png attachment "}
	if strings.Join(tree, "|") != strings.Join(want, "|") {
		t.Fatalf("tree\n%s\nwant\n%s", strings.Join(tree, "\n"), strings.Join(want, "\n"))
	}
	m.Attachments = m.Attachments[:1]
	if raw, err = Build(m); err != nil {
		t.Fatal(err)
	}
	if h, _ := message.Read(bytes.NewReader(raw)); !strings.HasPrefix(h.Header.Get("Content-Type"), "multipart/related") {
		t.Fatalf("top part %q", h.Header.Get("Content-Type"))
	}
	_, files, _, defects := pyRead(t, raw)
	if len(defects) > 0 || len(files) != 1 || files[0] != "logo.png" {
		t.Fatalf("python: files %v defects %v", files, defects)
	}
}
