package inbound

import (
	"context"
	"encoding/base64"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
)

// Forward modes of POST /v1/messages/{id}/forward.
const (
	ForwardInline  = "inline"
	ForwardWrapped = "wrapped"
)

// ReplyAll is POST /v1/messages/{id}/reply-all: the original sender in To,
// its other recipients in Cc, the mailbox's own address (and its
// plus-addresses) dropped, subject "Re: …", threaded as a reply.
func (s *Service) ReplyAll(ctx context.Context, rd Reader, c sending.Caller, id, body string, atts []ComposeAttachment, trackOpens *bool) (sent *Sent, err error) {
	defer func() { err = refused(err) }()
	scope, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	orig, err := getMessage(ctx, s.db, rd.WorkspaceID, scope, id)
	if err != nil {
		return nil, notFound(err, errMessageNotFound)
	}
	own := func(a string) bool { return sameMailbox(a, orig.Mailbox) }
	seen := map[string]bool{}
	pick := func(list []string) []string {
		var out []string
		for _, a := range list {
			k := strings.ToLower(a)
			if a == "" || own(a) || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, a)
		}
		return out
	}
	sender := orig.FromAddr
	if sender == "" {
		sender = orig.From
	}
	to := pick([]string{sender})
	if orig.Direction == DirectionSent {
		to = pick(orig.To)
	}
	cc := pick(append(append([]string{}, orig.To...), orig.Cc...))
	if len(to) == 0 && len(cc) > 0 {
		to, cc = cc[:1], cc[1:]
	}
	return s.Send(ctx, rd, c, Compose{To: to, Cc: cc, Subject: prefixed("Re: ", orig.Subject, "re:"), Body: body,
		ReplyToMessageID: orig.ID, Attachments: atts, TrackOpens: trackOpens})
}

// Forward is POST /v1/messages/{id}/forward: inline (the default) quotes
// the original under the body; wrapped attaches the received original as
// message/rfc822. It goes out from the original's mailbox as a new
// conversation.
func (s *Service) Forward(ctx context.Context, rd Reader, c sending.Caller, id string, to []string, body, mode string) (sent *Sent, err error) {
	defer func() { err = refused(err) }()
	if mode == "" {
		mode = ForwardInline
	}
	if mode != ForwardInline && mode != ForwardWrapped {
		return nil, apierr.InvalidRequest("mode must be inline or wrapped.")
	}
	scope, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	orig, err := getMessage(ctx, s.db, rd.WorkspaceID, scope, id)
	if err != nil {
		return nil, notFound(err, errMessageNotFound)
	}
	req := Compose{To: to, Subject: prefixed("Fwd: ", orig.Subject, "fwd:", "fw:"), asMailbox: orig.MailboxID}
	if mode == ForwardWrapped {
		if orig.Direction != DirectionReceived {
			return nil, apierr.Invalid422("not_received", "Only received mail can be forwarded wrapped; forward a sent message inline.")
		}
		raw, err := rawMessage(ctx, s.db, rd.WorkspaceID, scope, id)
		if err != nil {
			return nil, notFound(err, errMessageNotFound)
		}
		req.Attachments = []ComposeAttachment{{Filename: "forwarded.eml", ContentType: "message/rfc822", ContentBase64: base64.StdEncoding.EncodeToString(raw)}}
		req.Body = body
		if strings.TrimSpace(req.Body) == "" {
			req.Body = "Forwarded message attached."
		}
		return s.Send(ctx, rd, c, req)
	}
	// b is the markdown body (the quoted headers escaped, so an address's
	// <> is not read as html), t the text part (the same, unescaped).
	var b, t strings.Builder
	if strings.TrimSpace(body) != "" {
		b.WriteString(body + "\n\n")
		t.WriteString(body + "\n\n")
	}
	b.WriteString("---------- Forwarded message ----------\n\n")
	t.WriteString("---------- Forwarded message ----------\n\n")
	from := orig.FromAddr
	if from == "" {
		from = orig.From
	}
	if orig.FromName != "" {
		from = orig.FromName + " <" + from + ">"
	}
	for _, f := range [][2]string{{"From", from}, {"Date", orig.Date}, {"Subject", orig.Subject}, {"To", strings.Join(orig.To, ", ")}, {"Cc", strings.Join(orig.Cc, ", ")}} {
		if f[1] != "" {
			b.WriteString(f[0] + ": " + escapeMarkdown(f[1]) + "  \n")
			t.WriteString(f[0] + ": " + f[1] + "\n")
		}
	}
	b.WriteString("\n")
	t.WriteString("\n")
	text := searchBody(orig) // the text part, or the html as text
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		b.WriteString("> " + line + "\n")
		t.WriteString("> " + line + "\n")
	}
	req.Body, req.text = b.String(), t.String()
	return s.Send(ctx, rd, c, req)
}

// sameMailbox reports whether addr is the mailbox address or one of its
// plus-addresses.
func sameMailbox(addr, mailbox string) bool {
	addr, mailbox = strings.ToLower(addr), strings.ToLower(mailbox)
	if addr == mailbox {
		return true
	}
	local, domain, ok := strings.Cut(addr, "@")
	base, _, _ := strings.Cut(local, "+")
	return ok && base+"@"+domain == mailbox
}

// prefixed puts p before subject unless it already starts with one of the
// given lowercase prefixes.
func prefixed(p, subject string, already ...string) string {
	low := strings.ToLower(strings.TrimSpace(subject))
	for _, a := range already {
		if strings.HasPrefix(low, a) {
			return subject
		}
	}
	return p + subject
}

// escapeMarkdown keeps header values literal in the quoted block (an
// address in <> would otherwise read as an autolink or raw HTML).
func escapeMarkdown(s string) string {
	return strings.NewReplacer(`\`, `\\`, `<`, `\<`, `>`, `\>`, `*`, `\*`, `_`, `\_`, "`", "\\`", `[`, `\[`, `]`, `\]`).Replace(s)
}
