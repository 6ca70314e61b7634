package smtpsink

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/emersion/go-message"
)

// Parts reads a delivered message's header and its html and text bodies,
// decoded, with a standard MIME reader.
func Parts(t testing.TB, raw []byte) (message.Header, string, string) {
	t.Helper()
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var html, text string
	e.Walk(func(_ []int, p *message.Entity, _ error) error {
		ct, _, _ := p.Header.ContentType()
		if strings.HasPrefix(ct, "multipart/") {
			return nil // its parts come next; reading it would consume them
		}
		b, _ := io.ReadAll(p.Body)
		switch ct {
		case "text/html":
			html = string(b)
		case "text/plain":
			text = string(b)
		}
		return nil
	})
	return e.Header, html, text
}
