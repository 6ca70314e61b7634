package submission

import (
	"encoding/base64"
	"encoding/json"
	"net/textproto"
	"strings"

	"mailroom/internal/inbound"
	"mailroom/internal/sending"
)

// Headers the submission reads instead of passing on.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderTags           = "X-Mailroom-Tags"    // "key=value, key2=value2"
	HeaderSendAt         = "X-Mailroom-Send-At" // as send_at: RFC 3339 or "in 10 min"
	HeaderTopic          = "X-Mailroom-Topic"   // as topic: a topic key or id (one-click unsubscribe)
)

// sendRequest is the JSON send request a submitted message stands for; the
// sending service decodes and validates it exactly as a POST /v1/emails.
type sendRequest struct {
	From        string            `json:"from"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc,omitempty"`
	Bcc         []string          `json:"bcc,omitempty"`
	ReplyTo     []string          `json:"reply_to,omitempty"`
	Subject     string            `json:"subject"`
	HTML        *string           `json:"html,omitempty"`
	Text        *string           `json:"text,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Attachments []attachment      `json:"attachments,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	SendAt      *string           `json:"send_at,omitempty"`
	Topic       *string           `json:"topic,omitempty"`
}

type attachment struct {
	Filename      string `json:"filename"`
	ContentBase64 string `json:"content_base64"`
	ContentType   string `json:"content_type,omitempty"`
	ContentID     string `json:"content_id,omitempty"`
}

// passOn reports whether a header of the message is kept on the email:
// threading headers, the list headers (RFC 2369, RFC 2919, RFC 8058; the
// signature covers them) and the sender's own X- headers. Everything else
// is the service's to write (From, To, Date, MIME, DKIM...; the
// Message-ID is kept apart, see buildRequest), and Bcc is never read from
// a header: blind copies are the envelope's RCPTs.
func passOn(name string) bool {
	switch name {
	case "in-reply-to", "references":
		return true
	}
	return strings.HasPrefix(name, "list-") ||
		strings.HasPrefix(name, "x-") && !strings.HasPrefix(name, "x-mailroom-")
}

// fromTopic reports whether a header is one a topic writes: a message
// naming a topic carries the topic's unsubscribe headers, not its own.
func fromTopic(name string) bool {
	return name == "list-unsubscribe" || name == "list-unsubscribe-post"
}

// buildRequest turns a submitted message and its envelope into a send
// request and its options. The envelope decides who receives it: To and Cc
// header addresses that are RCPTs stay to and cc, other RCPTs are bcc, and
// header addresses that are not RCPTs are dropped (the envelope is what the
// client asked to deliver).
func buildRequest(raw []byte, mailFrom string, rcpts []string) ([]byte, sending.SendOptions, error) {
	var opts sending.SendOptions
	p, err := inbound.Parse(raw)
	if err != nil {
		return nil, opts, errBadMessage("the header block cannot be read")
	}
	req := sendRequest{Subject: p.Subject, HTML: p.HTML, Text: p.Text}
	req.From = p.FromAddr
	if p.FromName != "" {
		req.From = quoteName(p.FromName) + " <" + p.FromAddr + ">"
	}
	if p.FromAddr == "" {
		req.From = mailFrom
	}
	inEnvelope := map[string]bool{}
	for _, r := range rcpts {
		inEnvelope[strings.ToLower(r)] = true
	}
	placed := map[string]bool{}
	take := func(list []string) []string {
		var out []string
		for _, a := range list {
			a = strings.ToLower(a)
			if inEnvelope[a] && !placed[a] {
				placed[a] = true
				out = append(out, a)
			}
		}
		return out
	}
	req.To, req.Cc = take(p.To), take(p.Cc)
	for _, r := range rcpts {
		if !placed[strings.ToLower(r)] {
			placed[strings.ToLower(r)] = true
			req.Bcc = append(req.Bcc, r)
		}
	}
	if req.To == nil {
		return nil, opts, errNoTo
	}
	if rt := p.Headers["reply-to"]; rt != "" {
		for _, a := range strings.Split(rt, ",") {
			if a = strings.TrimSpace(a); a != "" {
				req.ReplyTo = append(req.ReplyTo, a)
			}
		}
	}
	topic, hasTopic := p.Headers[strings.ToLower(HeaderTopic)]
	if hasTopic {
		topic = strings.TrimSpace(unfold(topic))
		req.Topic = &topic
	}
	for name, v := range p.Headers {
		if passOn(name) && !(hasTopic && fromTopic(name)) {
			if req.Headers == nil {
				req.Headers = map[string]string{}
			}
			req.Headers[textproto.CanonicalMIMEHeaderKey(name)] = unfold(v)
		}
	}
	if v, ok := p.Headers[strings.ToLower(HeaderTags)]; ok {
		tags, err := parseTags(v)
		if err != nil {
			return nil, opts, err
		}
		req.Tags = tags
	}
	if v, ok := p.Headers[strings.ToLower(HeaderSendAt)]; ok {
		req.SendAt = &v
	}
	opts.IdempotencyKey = p.Headers[strings.ToLower(HeaderIdempotencyKey)]
	// The client's Message-ID threads its own copies; the sending service
	// keeps it when valid and new to the workspace.
	opts.MessageID = strings.TrimSpace(unfold(p.Headers["message-id"]))
	for _, pt := range p.Parts {
		a := attachment{Filename: pt.Filename, ContentType: pt.ContentType,
			ContentBase64: base64.StdEncoding.EncodeToString(pt.Data)}
		if pt.Inline { // an image the html shows as cid:: it stays inline
			a.ContentID = pt.ContentID
		}
		req.Attachments = append(req.Attachments, a)
	}
	if req.HTML == nil && req.Text == nil && len(req.Attachments) > 0 {
		empty := "" // an attachment-only message: the body is an empty text part
		req.Text = &empty
	}
	body, err := json.Marshal(req)
	return body, opts, err
}

// unfold joins a folded header value onto one line (RFC 5322 §2.2.3), so a
// continuation line stays part of its header and never becomes another.
func unfold(v string) string {
	return strings.Join(strings.FieldsFunc(v, func(r rune) bool { return r == '\r' || r == '\n' }), "")
}

// parseTags reads X-Mailroom-Tags: "key=value" pairs separated by commas;
// the sending service checks each key and value as it checks tags.
func parseTags(v string) (map[string]string, error) {
	tags := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, errBadTags
		}
		tags[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return tags, nil
}

// quoteName writes a display name so the send request's address parser
// reads it back as one name.
func quoteName(name string) string {
	if strings.ContainsAny(name, `"\<>,;:@()[]`) {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
	}
	return name
}
