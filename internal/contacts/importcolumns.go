package contacts

import (
	"encoding/csv"
	"regexp"
	"strings"
	"unicode"
)

// knownColumns are the column names of the common exports (Mailchimp,
// Brevo/Sendinblue, MailerLite, Kit/ConvertKit, Substack, Beehiiv, Resend),
// by their canonical form (canonColumn), and the role each plays. A column
// not listed is a merge attribute. docs/importing.md lists them.
var knownColumns = map[string]string{
	// The address.
	"email": "email", "email_address": "email", "e_mail": "email", "e_mail_address": "email",
	"emailaddress": "email", "mail": "email", "subscriber": "email", "subscriber_email": "email",
	// Names: the contact's first_name and last_name.
	"first_name": "first_name", "firstname": "first_name", "fname": "first_name", "first": "first_name",
	"given_name": "first_name", "prenom": "first_name", "vorname": "first_name", "name": "first_name",
	"last_name": "last_name", "lastname": "last_name", "lname": "last_name", "last": "last_name",
	"surname": "last_name", "family_name": "last_name", "nom": "last_name", "nachname": "last_name",
	// Tags (Mailchimp's TAGS, MailerLite's groups, Kit's tags).
	"tags": "tags", "tag": "tags", "groups": "tags", "labels": "tags",
	// The membership's status, and the two booleans exporters write.
	"status": "status", "member_status": "status", "subscriber_status": "status",
	"subscribed": "subscribed", "unsubscribed": "unsubscribed",
	// A JSON object of attributes (JSON imports).
	"attributes": "attributes", "data": "attributes",
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// canonColumn is a column name compared case, space and punctuation
// insensitively: "E-Mail Address" and "email_address" are one name.
func canonColumn(name string) string {
	s := strings.ToLower(strings.TrimSpace(name))
	s = strings.NewReplacer("é", "e", "è", "e", "ê", "e").Replace(s)
	return strings.Trim(nonWord.ReplaceAllString(s, "_"), "_")
}

// knownRole is the role of a column by its name alone ("" for an
// attribute).
func knownRole(name string) string { return knownColumns[canonColumn(name)] }

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// AttrNameOf is the attribute name a column becomes: as written when it is
// already an identifier (Plan, MEMBER_RATING: what templates and rules
// name), else its canonical lower_snake form ("Company Name" →
// company_name), so that templates and segment rules can name it.
func AttrNameOf(column string) string {
	if identifier.MatchString(column) {
		return column
	}
	if c := canonColumn(column); c != "" {
		return c
	}
	return column
}

// statusOf reads the status words exporters write as a membership status
// ("" when it is none of them).
func statusOf(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "subscribed", "active", "confirmed", "opted_in", "opt_in", "subscribe":
		return StatusSubscribed
	case "unsubscribed", "inactive", "unsubscribe", "opted_out", "opt_out":
		return StatusUnsubscribed
	case "pending", "unconfirmed":
		return StatusPending
	case "cleaned", "bounced", "complained", "junk":
		return StatusCleaned
	}
	return ""
}

// splitTags reads a tags cell as its exporter wrote it: Mailchimp quotes
// each tag ("a","b"), others separate them with commas or semicolons.
func splitTags(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var parts []string
	if strings.HasPrefix(s, `"`) {
		r := csv.NewReader(strings.NewReader(s))
		r.LazyQuotes = true
		if rec, err := r.Read(); err == nil {
			parts = rec
		}
	}
	if parts == nil {
		sep := ","
		if strings.Count(s, ";") > strings.Count(s, ",") {
			sep = ";"
		}
		parts = strings.Split(s, sep)
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimFunc(p, func(r rune) bool { return r == '"' || unicode.IsSpace(r) }); p != "" {
			out = append(out, p)
		}
	}
	return out
}
