package sending

import (
	"strings"
	"testing"
)

// TestBodiesApart: bodies and attachments over bodyApartOver leave the
// emails row (its html, text and attachments columns empty) for
// email_bodies; smaller ones stay inline. TestLargeBodyRoundTrip (e2e)
// reads both kinds back and delivers them.
func TestBodiesApart(t *testing.T) {
	small := &emailRow{ID: "em_1", HTML: "<p>hi</p>", Text: "hi"}
	row, body := small.insertArgs()
	if body != nil || row[10] != "<p>hi</p>" || row[11] != "hi" {
		t.Fatalf("small: row html %v text %v, body %v", row[10], row[11], body)
	}
	big := &emailRow{ID: "em_2", HTML: strings.Repeat("x", bodyApartOver), Text: "t"}
	row, body = big.insertArgs()
	if body == nil || body[0] != "em_2" || body[1] != big.HTML || body[2] != "t" || body[3] != "[]" {
		t.Fatalf("large: body %v", body)
	}
	if row[10] != nil || row[11] != nil || row[13] != "[]" || len(row) != len(emailColumns) || len(body) != len(bodyColumns) {
		t.Fatalf("large: row html %v text %v attachments %v", row[10], row[11], row[13])
	}
}
