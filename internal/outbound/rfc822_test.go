package outbound

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestForwardedMessagePart: a message/rfc822 attachment (a wrapped
// forward) goes out 7bit, or 8bit when it holds 8-bit text, never base64
// (RFC 2046 §5.2.1), and a standard parser reads the message inside:
// go-message here, and Python's email package where python3 is installed.
func TestForwardedMessagePart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, inner, cte string
	}{
		{"ascii", "From: ann@x.example\r\nTo: b@y.example\r\nSubject: Original note\r\n\r\nHello there.\r\n", "7bit"},
		{"8bit", "From: ann@x.example\r\nTo: b@y.example\r\nSubject: Original note\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße.\r\n", "8bit"},
	} {
		m := sampleMessage()
		m.Attachments = []Attachment{{Filename: "forwarded.eml", ContentType: "message/rfc822", Data: []byte(c.inner)}}
		raw, err := Build(m)
		if err != nil {
			t.Fatal(err)
		}
		// The inner message is there as it is (not encoded), and its part says so.
		j := bytes.Index(raw, []byte("\r\n\r\nFrom: ann@x.example"))
		partHeader := []byte{}
		if j >= 0 {
			partHeader = raw[bytes.LastIndex(raw[:j], []byte("\r\n--"))+2 : j]
		}
		if j < 0 || !bytes.Contains(partHeader, []byte("Content-Transfer-Encoding: "+c.cte+"\r\n")) {
			t.Fatalf("%s: the forwarded part is not %s:\n%s", c.name, c.cte, raw)
		}
		p := parse(t, raw)
		if p.attTypes["forwarded.eml"] != "message/rfc822" || !strings.Contains(string(p.attachments["forwarded.eml"]), "Subject: Original note") {
			t.Fatalf("%s: parsed %q as %q", c.name, p.attachments["forwarded.eml"], p.attTypes["forwarded.eml"])
		}
		py, err := exec.LookPath("python3")
		if err != nil {
			continue
		}
		cmd := exec.Command(py, "-c", `import email, sys
m = email.message_from_bytes(sys.stdin.buffer.read())
inner = [p for p in m.walk() if p.get_content_type() == "message/rfc822"]
assert inner, "no message/rfc822 part"
msg = inner[0].get_payload()[0]
print(msg["Subject"])`)
		cmd.Stdin = bytes.NewReader(raw)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "Original note" {
			t.Fatalf("%s: Python's email parser: %v %s", c.name, err, out)
		}
	}
}
