package delivery_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/sending"
)

// TestDeliveredListHeadersSigned: a marketing send's unsubscribe headers,
// its Feedback-ID and a caller's Sender reach the receiving server covered
// by the DKIM signature, as an independent verifier (go-msgauth against
// the key in DNS) sees it; altering the signed List-Unsubscribe or adding a
// second From breaks the signature.
func TestDeliveredListHeadersSigned(t *testing.T) {
	b := setup(t)
	id := b.insert(t, send{
		From: "Zoë <news@example.com>", To: []string{"bob@example.net"}, Subject: "Frühlingsangebote für Sie: alles muss raus, wirklich alles, ja",
		Text: "hello",
		Headers: map[string]string{
			"List-Unsubscribe":      "<https://mailroom.test/unsubscribe/abc>, <mailto:unsubscribe+abc@mailroom.test>",
			"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
			"Sender":                "bulk@example.com",
		},
	})
	b.waitStatus(t, id, sending.StatusDelivered)
	raw := messageFor(t, b.sink, "bob@example.net").Data
	if d := b.verifyDKIM(t, raw); d != "example.com" {
		t.Fatalf("signed by %q", d)
	}
	head := string(raw[:bytes.Index(raw, []byte("\r\n\r\n"))])
	unfolded := strings.ReplaceAll(head, "\r\n ", " ")
	if !strings.Contains(unfolded, "Feedback-Id: "+b.a.WorkspaceID+":marketing:") && !strings.Contains(unfolded, "Feedback-ID: "+b.a.WorkspaceID+":marketing:") {
		t.Errorf("no marketing Feedback-ID:\n%s", head)
	}
	sigField, _, _ := strings.Cut(strings.ReplaceAll(unfolded, " ", ""), "\r\n")
	_, hTag, _ := strings.Cut(sigField, ";h=")
	hTag, _, _ = strings.Cut(hTag, ";")
	for _, want := range []string{"List-Unsubscribe:List-Unsubscribe-Post", "Feedback-ID", "Sender", "From:From", "Subject:Subject"} {
		if !strings.Contains(hTag, want) {
			t.Errorf("h=%s lacks %s", hTag, want)
		}
	}
	for _, line := range strings.Split(head, "\r\n") {
		if len(line) > 76 && !strings.HasPrefix(line, "DKIM-Signature") && strings.Contains(line, "=?") {
			t.Errorf("encoded-word line of %d: %q", len(line), line)
		}
	}

	res := dnsresolve.New(b.dns.Addr())
	verify := func(msg []byte) error {
		vs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{
			LookupTXT: func(name string) ([]string, error) { return res.LookupTXT(context.Background(), name) },
		})
		if err != nil {
			return err
		}
		return vs[0].Err
	}
	altered := bytes.Replace(raw, []byte("https://mailroom.test/unsubscribe/abc"), []byte("https://attacker.test/unsubscribe/abc"), 1)
	if verify(altered) == nil {
		t.Error("a changed List-Unsubscribe still verifies")
	}
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	forged := append(append(append([]byte{}, raw[:end]...), "\r\nFrom: CEO <ceo@example.com>"...), raw[end:]...)
	if verify(forged) == nil {
		t.Error("a second From still verifies")
	}
}

// TestTransactionalFeedbackID: a send without unsubscribe headers is
// transactional in its Feedback-ID.
func TestTransactionalFeedbackID(t *testing.T) {
	b := setup(t)
	id := b.insert(t, send{From: "news@example.com", To: []string{"tx@example.net"}, Subject: "receipt", Text: "x"})
	b.waitStatus(t, id, sending.StatusDelivered)
	raw := messageFor(t, b.sink, "tx@example.net").Data
	b.verifyDKIM(t, raw)
	if !bytes.Contains(bytes.ToLower(raw), []byte(strings.ToLower("feedback-id: "+b.a.WorkspaceID+":transactional:"))) {
		t.Errorf("no transactional Feedback-ID:\n%s", raw)
	}
}
