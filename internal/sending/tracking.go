package sending

import (
	"strings"

	"github.com/tidwall/gjson"

	"mailroom/internal/analytics"
	"mailroom/internal/store"
	"mailroom/internal/tracking"
)

// boolean reads an optional boolean field; null is absent.
func (d *decoder) boolean(name string) *bool {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	switch strings.TrimSpace(string(raw)) {
	case "true":
		t := true
		return &t
	case "false":
		f := false
		return &f
	}
	d.fail("%s must be true or false.", name)
	return nil
}

// setBool is decoder.boolean for plain input.
func setBool(dst **bool, v gjson.Result) bool {
	switch v.Type {
	case gjson.Null:
		*dst = nil
		return true
	case gjson.True, gjson.False:
		b := v.Bool()
		*dst = &b
		return true
	}
	return false // the general decoder answers the error
}

// MailClass is the analytics class of an email: marketing when it carries
// List-Unsubscribe (the header of bulk and topic mail, RFC 8058), else
// transactional.
func MailClass(headers map[string]string) string {
	for k := range headers {
		if strings.EqualFold(k, "List-Unsubscribe") {
			return analytics.Marketing
		}
	}
	return analytics.Transactional
}

// bookTracking books the tracking row of a send that asked for it (never
// for a test send, which no person receives, but for opened@ and clicked@). A send without tracking pays
// one branch.
func bookTracking(tx *store.Tx, b *booking, serviceDomain string) {
	if !b.v.TrackOpens && !b.v.TrackClicks {
		return
	}
	engaged := false
	if b.row.TestMode {
		// Decided from the recipients: a scheduled send has no b.sim yet.
		kind, _ := outcomeOf(b.row.Recipients, serviceDomain)
		if engaged = kind == ScenarioOpened || kind == ScenarioClicked; !engaged {
			return
		}
	}
	flags := trackFlags(b.v.TrackOpens, b.v.TrackClicks)
	if engaged {
		// opened@ and clicked@ are engaged by a simulated person; their
		// counts reach the email only, never analytics.
		flags |= tracking.TestSend
	}
	e := b.row
	tracking.Book(tx, tracking.Booking{WorkspaceID: e.WorkspaceID, EmailID: e.ID, Flags: flags,
		Domain: domainOf(b.v.From.Email), MailClass: MailClass(e.Headers), TemplateID: e.TemplateID, Tags: e.Tags, At: e.CreatedAt})
}

// trackFlags are the tracking area's flags for what a send asked.
func trackFlags(opens, clicks bool) int {
	flags := 0
	if opens {
		flags |= tracking.TrackOpens
	}
	if clicks {
		flags |= tracking.TrackClicks
	}
	return flags
}
