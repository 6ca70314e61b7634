// Package sending holds the send API's domain rules: the send request, its
// validation and (later) the service that books an email. This file set is
// the pure layer: it reads bytes and a clock value and answers a Validated
// request or an *apierr.Error with the spec's code. It follows RFC 5322
// (addresses, header fields), RFC 5321 (length limits), RFC 2047 (encoded
// display names), RFC 4648 (base64) and RFC 5891 (IDN domains).
package sending

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"mailroom/internal/apierr"
)

// MaxRecipients is the spec's cap across to, cc and bcc together.
const MaxRecipients = 50

// Tag and idempotency-key limits (the spec gives none; see docs/decisions.md).
const (
	MaxTags              = 50
	MaxTagKey            = 256
	MaxTagValue          = 256
	MaxIdempotencyKeyLen = 256
	MaxReplyTo           = 50
)

// Request is a send request as decoded from JSON, before any rule is applied.
// Pointers tell a missing field from an empty one.
type Request struct {
	From           *string
	To             []string // a single string is accepted and becomes one entry
	Subject        *string
	HTML           *string
	Text           *string
	Cc             []string
	Bcc            []string
	ReplyTo        []string
	Headers        map[string]string
	Attachments    []AttachmentIn
	Tags           map[string]string
	SendAt         *string
	IdempotencyKey *string
	Template       json.RawMessage // nil when absent or null
	Topic          *string         // topic key or id
	TrackOpens     *bool           // track_opens (default off)
	TrackClicks    *bool           // track_clicks (default off)
	DryRun         *bool           // dry_run: answer a preflight report, send nothing (preflight.go)
}

// DecodeRequest reads a send request body. A body that is not JSON answers
// 400 invalid_json; a body that is not an object, or a field of the wrong
// JSON type, answers 400 invalid_request naming the field. null is the same
// as an absent field. Field names match exactly (snake_case as in the spec);
// an unknown top-level field answers 400 invalid_request, as everywhere else
// on the API: a misspelt field must not be silently dropped from an email.
func DecodeRequest(raw []byte) (*Request, error) {
	if r, ok := decodePlain(raw); ok {
		return r, nil
	}
	return decodeRequest(raw)
}

// decodeRequest is DecodeRequest for any input: every answer and every
// error message of the send request's decoding is defined here.
func decodeRequest(raw []byte) (*Request, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, apierr.InvalidRequest("The body must be a JSON object.")
		}
		return nil, apierr.BadRequest("invalid_json", "The body is not valid JSON: %s.", err.Error())
	}
	if fields == nil { // the body was the literal null
		return nil, apierr.InvalidRequest("The body must be a JSON object.")
	}
	for name := range fields {
		if !slices.Contains(requestFields, name) {
			// Sorted only now, so that the answer names the same field
			// whatever the map's order.
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				if !slices.Contains(requestFields, name) {
					return nil, apierr.InvalidRequest("Unknown field %q in the send request.", clip(name))
				}
			}
		}
	}
	d := decoder{fields: fields}
	r := &Request{
		From:           d.str("from"),
		To:             d.list("to"),
		Subject:        d.str("subject"),
		HTML:           d.str("html"),
		Text:           d.str("text"),
		Cc:             d.list("cc"),
		Bcc:            d.list("bcc"),
		ReplyTo:        d.list("reply_to"),
		Headers:        d.strMap("headers"),
		Attachments:    d.attachments("attachments"),
		Tags:           d.tags("tags"),
		SendAt:         d.str("send_at"),
		IdempotencyKey: d.str("idempotency_key"),
		Topic:          d.str("topic"),
		TrackOpens:     d.boolean("track_opens"),
		TrackClicks:    d.boolean("track_clicks"),
		DryRun:         d.boolean("dry_run"),
	}
	if t, ok := fields["template"]; ok && !isNull(t) {
		r.Template = t
	}
	// Resend's spelling of send_at; the spec's field wins when both are given.
	if at := d.str("scheduled_at"); r.SendAt == nil {
		r.SendAt = at
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// requestFields are the send request's fields (the spec's table).
var requestFields = []string{"from", "to", "subject", "html", "text", "cc", "bcc", "reply_to", "headers",
	"attachments", "tags", "send_at", "idempotency_key", "template", "topic", "track_opens", "track_clicks",
	"dry_run", "scheduled_at"} // the last: Resend's spelling, accepted as an alias (docs/decisions.md)

// decoder reads typed fields out of a JSON object and keeps the first error,
// so DecodeRequest reads as a list of fields.
type decoder struct {
	fields map[string]json.RawMessage
	err    error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = apierr.InvalidRequest(format, args...)
	}
}

func (d *decoder) str(name string) *string {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		d.fail("%s must be a string.", name)
		return nil
	}
	return &s
}

func (d *decoder) list(name string) []string {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if strings.TrimSpace(one) == "" {
			return nil
		}
		return []string{one}
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		d.fail("%s must be a string or an array of strings.", name)
		return nil
	}
	out := make([]string, len(items))
	for i, item := range items {
		if json.Unmarshal(item, &out[i]) != nil || isNull(item) {
			d.fail("%s[%d] must be a string.", name, i)
			return nil
		}
	}
	return out
}

func (d *decoder) strMap(name string) map[string]string {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	var items map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		d.fail("%s must be an object of string values.", name)
		return nil
	}
	out := make(map[string]string, len(items))
	for k, v := range items {
		var s string
		if isNull(v) || json.Unmarshal(v, &s) != nil {
			d.fail("%s.%s must be a string.", name, clip(k))
			return nil
		}
		out[k] = s
	}
	return out
}

// tags reads the spec's object of strings, or Resend's [{name, value}]
// (a repeated name: the last wins, as in an object).
func (d *decoder) tags(name string) map[string]string {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		return d.strMap(name)
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		d.fail("%s must be an object of string values or an array of { name, value } objects.", name)
		return nil
	}
	out := make(map[string]string, len(items))
	for i, item := range items {
		sub := decoder{fields: item}
		n, v := sub.str("name"), sub.str("value")
		for k := range item {
			if k != "name" && k != "value" {
				sub.fail("has an unknown field %q", clip(k))
			}
		}
		if sub.err == nil && n == nil {
			sub.fail("name is required")
		}
		if sub.err != nil {
			e, _ := apierr.As(sub.err)
			d.fail("%s[%d]: %s", name, i, e.Message)
			return nil
		}
		out[*n] = ""
		if v != nil {
			out[*n] = *v
		}
	}
	return out
}

func (d *decoder) attachments(name string) []AttachmentIn {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		d.fail("%s must be an array of { filename, content_base64, content_type? } objects.", name)
		return nil
	}
	out := make([]AttachmentIn, len(items))
	for i, item := range items {
		var f map[string]json.RawMessage
		if json.Unmarshal(item, &f) != nil || f == nil {
			d.fail("%s[%d] must be an object { filename, content_base64, content_type? }.", name, i)
			return nil
		}
		sub := decoder{fields: f}
		a := AttachmentIn{}
		if s := sub.str("filename"); s != nil {
			a.Filename = *s
		}
		if s := sub.str("content_base64"); s != nil {
			a.ContentBase64 = *s
		} else if s := sub.content("content"); s != nil { // Resend's spelling
			a.ContentBase64 = *s
		}
		if s := sub.str("content_type"); s != nil {
			a.ContentType = *s
		} else if s := sub.str("contentType"); s != nil { // the Resend Node SDK's spelling
			a.ContentType = *s
		}
		if s := sub.str("content_id"); s != nil { // Resend's inline image
			a.ContentID = *s
		}
		if sub.err != nil {
			e, _ := apierr.As(sub.err)
			d.fail("%s[%d].%s", name, i, e.Message)
			return nil
		}
		out[i] = a
	}
	return out
}

// content reads Resend's attachment content: a base64 string, or an array
// of byte values (0-255), which it answers as base64.
func (d *decoder) content(name string) *string {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		return d.str(name)
	}
	var bs []int
	if json.Unmarshal(raw, &bs) != nil {
		d.fail("%s must be a base64 string or an array of byte values.", name)
		return nil
	}
	b := make([]byte, len(bs))
	for i, v := range bs {
		if v < 0 || v > 255 {
			d.fail("%s[%d] is not a byte value (0 to 255).", name, i)
			return nil
		}
		b[i] = byte(v)
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// Validated is a send request that passed every rule this package can check
// without a database. Recipients are deduplicated; strings are as sent.
type Validated struct {
	From    Address
	To      []Address
	Cc      []Address
	Bcc     []Address
	ReplyTo []Address
	Subject string
	HTML    string // "" when absent
	Text    string // "" when absent

	// TemplateID and TemplateVariables are set when the send names a template.
	TemplateID        string
	TemplateVariables json.RawMessage // compact JSON object, nil when absent
	TemplateVersion   int             // the version rendered (set by the service)

	// Topic is the topic key or id as sent ("" when none); TopicID the
	// topic it names (set by the service, which checks the recipients'
	// opt-in and adds the unsubscribe headers).
	Topic   string
	TopicID string

	Headers           map[string]string
	Attachments       []Attachment
	AttachmentsBase64 int64 // counted against the 40 MB limit
	Tags              map[string]string

	SendAt      *time.Time // nil means send now
	SendAtInput string     // send_at as written, for the fingerprint (relative phrases move with the clock)

	IdempotencyKey string // "" when absent
	// TestMode is true when every recipient is a reserved test address; such a
	// send never reaches the outbound provider.
	TestMode bool

	// TrackOpens and TrackClicks ask for the open pixel and the rewritten
	// links (internal/tracking).
	TrackOpens, TrackClicks bool
}

// Recipients lists to, cc and bcc in that order.
func (v *Validated) Recipients() []Address {
	out := make([]Address, 0, len(v.To)+len(v.Cc)+len(v.Bcc))
	out = append(out, v.To...)
	out = append(out, v.Cc...)
	return append(out, v.Bcc...)
}

// Rules are the inputs Validate needs beyond the request.
type Rules struct {
	// ServiceDomain is where the reserved test addresses live.
	ServiceDomain string
	// TemplateExists reports whether id may name a template of the
	// workspace. Nil means no template exists: every template answers
	// invalid_template. The service, which renders the template after
	// validation (and answers a missing one then), accepts every id here.
	TemplateExists func(id string) bool
}

// Validate applies the send rules with no template lookup (see Rules).
func Validate(r *Request, now time.Time, serviceDomain string) (*Validated, error) {
	return Rules{ServiceDomain: serviceDomain}.Validate(r, now)
}

// Validate checks r against the spec's send rules and returns the first
// failure as an *apierr.Error, in this order: from, recipients (missing_to,
// invalid_recipient, too_many_recipients, mixed_test_and_real_recipients),
// reply_to, subject, body and template, headers, attachments, tags, send_at,
// idempotency_key. Checks that need the database (sending domain, suppression,
// quotas) are the service's.
func (rules Rules) Validate(r *Request, now time.Time) (*Validated, error) {
	v := &Validated{}
	if r.From == nil || strings.TrimSpace(*r.From) == "" {
		return nil, apierr.BadRequest("missing_from", "from is required: the sender address, e.g. \"Acme <hello@acme.com>\".")
	}
	from, err := ParseAddress(*r.From)
	if err != nil {
		return nil, apierr.BadRequest("invalid_from", "from %q is not a valid address: it %s.", clip(*r.From), err)
	}
	v.From = from

	if err := rules.recipients(r, v); err != nil {
		return nil, err
	}
	if len(r.ReplyTo) > MaxReplyTo {
		return nil, apierr.InvalidRequest("reply_to has %d addresses; at most %d are allowed.", len(r.ReplyTo), MaxReplyTo)
	}
	for i, s := range r.ReplyTo {
		a, err := ParseAddress(s)
		if err != nil {
			return nil, apierr.InvalidRequest("reply_to[%d] %q is not a valid address: it %s.", i, clip(s), err)
		}
		v.ReplyTo = append(v.ReplyTo, a)
	}

	// With a template, the template's subject is used unless one is given.
	if r.Subject == nil && r.Template == nil {
		return nil, apierr.BadRequest("missing_subject", "subject is required (it may be empty).")
	}
	if r.Subject != nil {
		if hasControlExceptTab(*r.Subject) {
			return nil, apierr.InvalidRequest("subject contains a line break or control character, which is not allowed in a header.")
		}
		v.Subject = *r.Subject
	}
	if r.HTML != nil {
		v.HTML = *r.HTML
	}
	if r.Text != nil {
		v.Text = *r.Text
	}
	if r.Template != nil {
		if err := rules.template(r.Template, v); err != nil {
			return nil, err
		}
	} else if v.HTML == "" && v.Text == "" {
		return nil, apierr.BadRequest("missing_body", "Give html, text or both (or a template).")
	}

	if err := ValidateHeaders(r.Headers); err != nil {
		return nil, err
	}
	if err := validateTopic(r, v); err != nil {
		return nil, err
	}
	v.Headers = r.Headers

	atts, total, err := DecodeAttachments(r.Attachments)
	if err != nil {
		return nil, err
	}
	v.Attachments, v.AttachmentsBase64 = atts, total

	if err := validateTags(r.Tags); err != nil {
		return nil, err
	}
	v.Tags = r.Tags
	v.TrackOpens, v.TrackClicks = r.TrackOpens != nil && *r.TrackOpens, r.TrackClicks != nil && *r.TrackClicks

	if r.SendAt != nil {
		t, err := ParseSendAt(*r.SendAt, now)
		if err != nil {
			return nil, err
		}
		v.SendAt = &t
		v.SendAtInput = strings.Join(strings.Fields(strings.ToLower(*r.SendAt)), " ")
	}

	if r.IdempotencyKey != nil {
		k := *r.IdempotencyKey
		if k == "" || len(k) > MaxIdempotencyKeyLen || hasControl(k) {
			return nil, apierr.InvalidRequest("idempotency_key must be 1 to %d bytes without control characters.", MaxIdempotencyKeyLen)
		}
		v.IdempotencyKey = k
	}
	return v, nil
}

// recipients parses to, cc and bcc, drops repeats (the same address compared
// without case; the first of to, cc, bcc wins), then applies the count and
// test-mode rules.
func (rules Rules) recipients(r *Request, v *Validated) error {
	if len(r.To) == 0 {
		return apierr.BadRequest("missing_to", "to is required: one address or an array of addresses.")
	}
	seen := map[string]bool{}
	lists := []struct {
		field string
		in    []string
		out   *[]Address
	}{{"to", r.To, &v.To}, {"cc", r.Cc, &v.Cc}, {"bcc", r.Bcc, &v.Bcc}}
	total := 0
	for _, l := range lists {
		for i, s := range l.in {
			a, err := ParseAddress(s)
			if err != nil {
				return apierr.BadRequest("invalid_recipient", "%s[%d] %q is not a valid address: it %s.", l.field, i, clip(s), err).
					With("field", fmt.Sprintf("%s[%d]", l.field, i))
			}
			key := strings.ToLower(a.Email)
			if seen[key] {
				continue
			}
			seen[key] = true
			*l.out = append(*l.out, a)
			total++
		}
	}
	if total > MaxRecipients {
		return apierr.BadRequest("too_many_recipients", "%d distinct addresses across to, cc and bcc; at most %d are allowed. Use the batch route or a broadcast for more.", total, MaxRecipients)
	}
	var test, live []string
	for _, a := range v.Recipients() {
		if _, _, ok := ClassifyTestAddress(a.Email, rules.ServiceDomain); ok {
			test = append(test, a.Email)
		} else {
			live = append(live, a.Email)
		}
	}
	if len(test) > 0 && len(live) > 0 {
		return apierr.BadRequest("mixed_test_and_real_recipients",
			"%s is a test address and %s is not; send test addresses on their own. Nothing was sent.", test[0], live[0])
	}
	v.TestMode = len(test) > 0
	return nil
}

// template checks the { id, variables? } shape, then asks TemplateExists.
func (rules Rules) template(raw json.RawMessage, v *Validated) error {
	bad := func(why string) error {
		return apierr.BadRequest("invalid_template", "template %s; it must be { \"id\": string, \"variables\"?: object }.", why)
	}
	var t map[string]json.RawMessage
	if json.Unmarshal(raw, &t) != nil || t == nil {
		return bad("is not an object")
	}
	for k := range t {
		if k != "id" && k != "variables" {
			return bad(fmt.Sprintf("has an unknown field %q", clip(k)))
		}
	}
	var id string
	if json.Unmarshal(t["id"], &id) != nil || strings.TrimSpace(id) == "" {
		return bad("needs a non-empty string id")
	}
	if vars, ok := t["variables"]; ok && !isNull(vars) {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(vars))
		dec.UseNumber()
		if dec.Decode(&m) != nil || m == nil {
			return bad("has variables that are not an object")
		}
		canon, err := json.Marshal(m) // sorted keys: one spelling per meaning
		if err != nil {
			return bad("has variables that cannot be read")
		}
		v.TemplateVariables = canon
	}
	if rules.TemplateExists == nil || !rules.TemplateExists(id) {
		return apierr.BadRequest("invalid_template", "template %q does not exist on this workspace or has no published version.", clip(id))
	}
	v.TemplateID = id
	return nil
}

// validateTags keeps tags usable as analytics filters ("key:value"): keys of
// 1 to 256 bytes without ':' or control characters, values up to 256 bytes.
func validateTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return apierr.InvalidRequest("tags has %d entries; at most %d are allowed.", len(tags), MaxTags)
	}
	keys := slices.Sorted(maps.Keys(tags))
	for _, k := range keys {
		if k == "" || len(k) > MaxTagKey || strings.Contains(k, ":") || hasControl(k) {
			return apierr.InvalidRequest("tags: key %q must be 1 to %d bytes without ':' or control characters.", clip(k), MaxTagKey)
		}
		if val := tags[k]; len(val) > MaxTagValue || hasControl(val) {
			return apierr.InvalidRequest("tags.%s: the value must be at most %d bytes without control characters.", k, MaxTagValue)
		}
	}
	return nil
}

// Fingerprint is a SHA-256 over a canonical encoding of the validated send,
// used to tell "same body" from "different body" under one idempotency key.
// Key order, whitespace, letter case of domains and duplicate recipients do
// not change it; send_at counts as written, so that retrying "in 10 minutes"
// a second later is the same request. The idempotency key itself is left out.
func (v *Validated) Fingerprint() string {
	type att struct {
		Filename    string `json:"f"`
		ContentType string `json:"t"`
		SHA256      string `json:"h"`
		ContentID   string `json:"c,omitempty"` // omitted when empty: earlier fingerprints stay valid
	}
	type canon struct {
		From        string            `json:"from"`
		To          []string          `json:"to"`
		Cc          []string          `json:"cc"`
		Bcc         []string          `json:"bcc"`
		ReplyTo     []string          `json:"reply_to"`
		Subject     string            `json:"subject"`
		HTML        string            `json:"html"`
		Text        string            `json:"text"`
		TemplateID  string            `json:"template_id"`
		TemplateVar json.RawMessage   `json:"template_variables,omitempty"`
		Topic       string            `json:"topic,omitempty"`
		Headers     map[string]string `json:"headers"`
		Attachments []att             `json:"attachments"`
		Tags        map[string]string `json:"tags"`
		SendAt      string            `json:"send_at"`
	}
	strs := func(as []Address) []string {
		out := make([]string, len(as))
		for i, a := range as {
			out[i] = a.String()
		}
		return out
	}
	c := canon{
		From: v.From.String(), To: strs(v.To), Cc: strs(v.Cc), Bcc: strs(v.Bcc), ReplyTo: strs(v.ReplyTo),
		Subject: v.Subject, HTML: v.HTML, Text: v.Text,
		TemplateID: v.TemplateID, TemplateVar: v.TemplateVariables, Topic: v.Topic,
		Headers: v.Headers, Tags: v.Tags, SendAt: v.SendAtInput,
	}
	for _, a := range v.Attachments {
		sum := sha256.Sum256(a.Content)
		c.Attachments = append(c.Attachments, att{a.Filename, a.ContentType, hex.EncodeToString(sum[:]), a.ContentID})
	}
	b, _ := json.Marshal(c) // plain strings and maps: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
