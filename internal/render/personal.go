package render

import (
	"html"
	"strings"
)

// Links are one recipient's personal links in a marketing message
// (topics.MailLinks): the one-click unsubscribe URL, the preference page,
// and the List-Unsubscribe header made from the same token.
type Links struct{ Unsubscribe, Preferences, ListUnsubscribe string }

// Put makes the links {{ unsubscribe_url }} and {{ preferences_url }} in v.
func (l Links) Put(v map[string]any) {
	v[UnsubscribeURL], v[PreferencesURL] = l.Unsubscribe, l.Preferences
}

// Headers are the RFC 8058 one-click headers of the message.
func (l Links) Headers() map[string]string {
	return map[string]string{"List-Unsubscribe": l.ListUnsubscribe, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
}

// FooterMark tells a footer Mailroom added: a body that already has one
// gets no second.
const FooterMark = "mailroom-unsubscribe-footer"

// AddFooter gives a body that shows no unsubscribe link of its own (the
// recipient's URL is nowhere in it) a small plain footer with the link and
// the preference page, in both parts: html before </body> when there is
// one, else at the end; never inside a tag, never twice.
func AddFooter(out Output, l Links) Output {
	html := out.HTML != "" && !strings.Contains(out.HTML, l.Unsubscribe) && !strings.Contains(out.HTML, FooterMark)
	text := out.Text != "" && !strings.Contains(out.Text, l.Unsubscribe)
	return AddFooterTo(out, l, html, text)
}

// AddFooterTo adds the footer to the parts named, without looking for a
// link already there: for a caller that knows, from the template, that no
// part it names shows one (a broadcast's fan-out, once per broadcast).
func AddFooterTo(out Output, l Links, toHTML, toText bool) Output {
	return FooterOf(l, toHTML, toText).AddTo(out)
}

// Footer is one recipient's footer, each part's ("" for a part that gets
// none): Template.RenderForSendWith writes it as it renders, AddTo adds it
// to a body already rendered; both put it where AddFooterTo does.
type Footer struct{ HTML, Text string }

// FooterOf is the footer with l's links for the parts named.
func FooterOf(l Links, toHTML, toText bool) Footer {
	var f Footer
	if toHTML {
		prefs := ""
		if l.Preferences != "" {
			prefs = ` | <a href="` + html.EscapeString(l.Preferences) + `">Email preferences</a>`
		}
		// ASCII only: a body that was 7bit stays 7bit, not quoted-printable.
		f.HTML = `<div class="` + FooterMark + `" style="margin-top:24px;font-size:12px;color:#666">` +
			`You receive this because you subscribed. <a href="` + html.EscapeString(l.Unsubscribe) + `">Unsubscribe</a>` + prefs + `</div>`
	}
	if toText {
		prefs := ""
		if l.Preferences != "" {
			prefs = "\nEmail preferences: " + l.Preferences
		}
		f.Text = "\n\n--\nUnsubscribe: " + l.Unsubscribe + prefs + "\n"
	}
	return f
}

// AddTo adds the footer to a rendered body's non-empty parts: html before
// its last </body> when there is one, else at the end; text at the end.
func (f Footer) AddTo(out Output) Output {
	out.HTML = withHTMLFooter(out.HTML, f.HTML)
	if f.Text != "" && out.Text != "" {
		out.Text += f.Text
	}
	return out
}

// withHTMLFooter is doc with footer before its last </body>, else at its
// end; an empty doc stays empty.
func withHTMLFooter(doc, footer string) string {
	if footer == "" || doc == "" {
		return doc
	}
	if i := lastBodyClose(doc); i >= 0 {
		return doc[:i] + footer + doc[i:]
	}
	return doc + footer
}

// lastBodyClose is the index of the last "</body>" in any case, or -1,
// without a lowered copy of the body for each recipient.
func lastBodyClose(h string) int {
	for i := strings.LastIndex(h, "</"); i >= 0; i = strings.LastIndex(h[:i], "</") {
		if len(h)-i >= 7 && strings.EqualFold(h[i:i+7], "</body>") {
			return i
		}
	}
	return -1
}

// MemberVars are a member's merge fields: its attributes (later maps over
// earlier: the membership's over the contact's) and the builtins email,
// contact_id, first_name and last_name.
func MemberVars(email, first, last, contactID string, attrs ...map[string]string) map[string]any {
	v := map[string]any{}
	for _, a := range attrs {
		for k, x := range a {
			v[k] = x
		}
	}
	// Each merge field also answers to its lowercase name, as Mailchimp's
	// *|COMPANY|* is read ({{ company }}), unless a field has that name.
	for k, x := range v {
		if l := strings.ToLower(k); l != k {
			if _, ok := v[l]; !ok {
				v[l] = x
			}
		}
	}
	v["email"], v["contact_id"] = email, contactID
	// The contact's names, unless empty and a merge field of the same name
	// is set (an import's first_name lands among the membership's fields).
	for k, x := range map[string]string{"first_name": first, "last_name": last} {
		if _, ok := v[k]; !ok || x != "" {
			v[k] = x
		}
	}
	return v
}
