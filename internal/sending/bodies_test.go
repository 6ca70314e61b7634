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
	row, body := small.insertArgs(ClassTransactional)
	if body != nil || row[10] != "<p>hi</p>" || row[11] != "hi" {
		t.Fatalf("small: row html %v text %v, body %v", row[10], row[11], body)
	}
	big := &emailRow{ID: "em_2", HTML: strings.Repeat("x", bodyApartOver), Text: "t"}
	row, body = big.insertArgs(ClassTransactional)
	if body == nil || body[0] != "em_2" || body[1] != big.HTML || body[2] != "t" || body[3] != "[]" {
		t.Fatalf("large: body %v", body)
	}
	if row[10] != nil || row[11] != nil || row[13] != "[]" || len(row) != emailWidth || len(body) != bodyWidth || row[emailWidth-1] != ClassTransactional {
		t.Fatalf("large: row html %v text %v attachments %v", row[10], row[11], row[13])
	}
}

// TestAcceptStatementsAgree: each dialect's accept statement has one value
// per column insertArgs fills, so a column added to insertEmails without its
// array in acceptEmailsPG (or its value) fails here before it fails a send.
func TestAcceptStatementsAgree(t *testing.T) {
	row, _ := (&emailRow{ID: "em_1"}).insertArgs(ClassMarketing)
	body := []any{"em_1", nil, nil, "[]"}
	for _, c := range []struct {
		name        string
		head, pg    string
		width, args int
	}{
		{"emails", insertEmails, acceptEmailsPG, emailWidth, len(row)},
		{"email_bodies", insertBodies, acceptBodiesPG, bodyWidth, len(body)},
	} {
		if n := strings.Count(c.pg, "unnest(?::"); n != c.width || c.args != c.width || !strings.HasPrefix(c.pg, c.head) {
			t.Errorf("%s: %d columns, %d arrays on PostgreSQL, %d values from insertArgs", c.name, c.width, n, c.args)
		}
	}
}
