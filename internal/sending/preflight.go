package sending

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/contentcheck"
	"mailroom/internal/suppressions"
)

// A dry run (dry_run: true, or ?dry_run=true) walks a send through every
// step of prepare — validation, idempotency, template, topic, sender,
// domain or sandbox, size, policy, test addresses, suppression — and builds
// and signs its message as delivery would, but stops before the commit:
// nothing is written, counted or sent (docs/decisions.md, "Preflight").

// Preflight is a dry run's answer: would the send be accepted, and the
// message as it would go out.
type Preflight struct {
	Object    string `json:"object"` // "preflight"
	WouldSend bool   `json:"would_send"`
	// Headers are the signed message's header fields, unfolded (DKIM-Signature
	// among them); nil when the message was not built.
	Headers  map[string]string      `json:"headers"`
	Size     int                    `json:"size"` // bytes of the signed message
	Verdicts []Verdict              `json:"verdicts"`
	Content  []contentcheck.Finding `json:"content"`
}

// Verdict is one step's answer; a failing one carries the code and message
// the real send would refuse with.
type Verdict struct {
	Check     string `json:"check"`
	OK        bool   `json:"ok"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message"`
	Recipient string `json:"recipient,omitempty"` // suppression: one verdict per recipient
}

// Previewer builds and signs a message exactly as delivery's first attempt
// would, without a job (delivery.Service.Preview).
type Previewer interface {
	Preview(ctx context.Context, o *Outgoing, now time.Time) ([]byte, error)
}

// SetPreviewer installs what builds a dry run's message (the app wires the
// delivery engine, built after this service). Call it before Start.
func (s *Service) SetPreviewer(p Previewer) { s.preview = p }

// dryRun decides whether a call is a dry run: the query says so, or an
// entry does. A batch that mixes dry-run entries with real ones is refused
// whole, so that nothing is sent by a call meant to send nothing.
func dryRun(reqs []*Request, query bool) (bool, error) {
	dry, real := 0, 0
	for _, r := range reqs {
		switch {
		case r == nil:
		case r.DryRun != nil && *r.DryRun:
			dry++
		default:
			real++
		}
	}
	if query {
		return true, nil
	}
	if dry > 0 && real > 0 {
		return false, apierr.InvalidRequest("%d entries have dry_run: true and %d do not; a batch is a dry run as a whole (give dry_run on every entry, or ?dry_run=true).", dry, real)
	}
	return dry > 0, nil
}

// preflights answers a dry run for every entry; out holds each entry's
// decoding error.
func (s *Service) preflights(ctx context.Context, c Caller, reqs []*Request, out []Result, keys []string, batch bool, o SendOptions, now time.Time) ([]Result, error) {
	ws, wsErr := s.callerWorkspace(ctx, c)
	for i, req := range reqs {
		p := &Preflight{Object: "preflight", Verdicts: []Verdict{}, Content: []contentcheck.Finding{}}
		var err error
		switch {
		case req == nil:
			err = p.record("validation", out[i].Err, "")
		case wsErr != nil:
			err = p.record("sender", wsErr, "")
		default:
			err = s.preflight(ctx, p, c, ws, req, keys[i], batch, o, now)
		}
		if err != nil {
			return nil, err
		}
		p.WouldSend = true
		for _, v := range p.Verdicts {
			p.WouldSend = p.WouldSend && v.OK
		}
		out[i] = Result{Outcome: Outcome{HTTPStatus: apierr.StatusOK, Preflight: p}}
	}
	// No commit vouched for the caller's key: read it again, as for any
	// answer that was not committed.
	return s.confirmKey(ctx, c, make([]*booking, len(out)), out)
}

// record adds check's verdict: passed with msg when err is nil, else failed
// with the refusal's code and message. An error that is not a refusal
// (the database) is returned.
func (p *Preflight) record(check string, err error, msg string) error {
	if err == nil {
		p.Verdicts = append(p.Verdicts, Verdict{Check: check, OK: true, Message: msg})
		return nil
	}
	ae, ok := apierr.As(err)
	if !ok {
		return err
	}
	p.Verdicts = append(p.Verdicts, Verdict{Check: check, Code: ae.Code, Message: ae.Message})
	return nil
}

// failed reports whether the last verdict failed.
func (p *Preflight) failed() bool { return !p.Verdicts[len(p.Verdicts)-1].OK }

// preflight is prepare without its reservations and counts, recording each
// step's verdict, then the message as delivery would build and sign it and
// the content checks.
func (s *Service) preflight(ctx context.Context, p *Preflight, c Caller, ws *workspaceInfo, req *Request, headerKey string, batch bool, o SendOptions, now time.Time) error {
	v, err := s.validate(c, req, headerKey, batch, now)
	if err := p.record("validation", err, "The request is valid."); err != nil || p.failed() {
		return err
	}
	if v.IdempotencyKey != "" {
		if err := s.idempotencyVerdict(ctx, p, c.WorkspaceID, v, now); err != nil {
			return err
		}
	}
	if v.TemplateID != "" {
		err := s.withTemplate(ctx, c.WorkspaceID, req, v)
		if err := p.record("template", err, fmt.Sprintf("Template %s renders.", v.TemplateID)); err != nil || p.failed() {
			return err
		}
	}
	if v.Topic != "" {
		if err := p.record("topic", s.withTopic(ctx, c.WorkspaceID, v), "Every recipient receives topic "+v.Topic+"."); err != nil {
			return err
		}
	}
	if err := p.record("sender", senderAllowed(c, ws, v), "The workspace may send from "+v.From.Email+" with this key."); err != nil {
		return err
	}
	check, err := s.fromDomain(ctx, c.WorkspaceID, ws, v)
	msg := domainOf(v.From.Email) + " is a verified domain of the workspace."
	if check == "sandbox" {
		msg = "The sandbox sender reaches only the workspace's own addresses and the test addresses; these are."
	}
	if err := p.record(check, err, msg); err != nil {
		return err
	}
	signable := !p.failed()
	row, err := s.newRow(c, v, now)
	if err != nil {
		return err
	}
	if validMessageID(o.MessageID) {
		row.MessageID = o.MessageID
	}
	if err := p.record("size", checkSize(v, row, now), "The message is within the 40 MB limit."); err != nil {
		return err
	}
	if err := s.policyVerdict(ctx, p, c, v, row, o, now); err != nil {
		return err
	}
	if row.TestMode {
		outcome, _ := outcomeOf(row.Recipients, s.serviceDomain)
		p.Verdicts = append(p.Verdicts, Verdict{Check: "test_addresses", OK: true, Message: fmt.Sprintf(
			"Every recipient is a test address: the send is played out without a server (outcome %s), moves no counter and is not looked up on the suppression list.", outcome)})
	} else if err := s.suppressionVerdicts(ctx, p, c.WorkspaceID, v); err != nil {
		return err
	}
	if signable && s.preview != nil {
		if err := s.built(ctx, p, v, row, now); err != nil {
			return err
		}
	}
	p.Content = contentcheck.Check(contentcheck.Content{HTML: v.HTML, Text: v.Text,
		Marketing:       v.TopicID != "" || MailClass(v.Headers) == ClassMarketing,
		UnsubscribeURLs: []string{UnsubscribeURLMark, PreferencesURLMark}})
	return nil
}

// idempotencyVerdict reads the key without reserving it: a stored key with
// the same body would answer its first outcome and send nothing new.
func (s *Service) idempotencyVerdict(ctx context.Context, p *Preflight, ws string, v *Validated, now time.Time) error {
	stored, err := lookupKey(ctx, s.db, ws, v.IdempotencyKey, now)
	if err != nil {
		return err
	}
	if stored == nil {
		return p.record("idempotency", nil, "The idempotency_key is new; a dry run does not reserve it.")
	}
	first, err := stored.answer(v.Fingerprint())
	if err != nil {
		return p.record("idempotency", err, "")
	}
	p.Verdicts = append(p.Verdicts, Verdict{Check: "idempotency",
		Message: fmt.Sprintf("This idempotency_key already booked %s with the same body: the real call answers that outcome again and sends nothing new.", first.ID)})
	return nil
}

// policyVerdict asks the policy area what Admit would answer, counting
// nothing (policy.Service.Check).
func (s *Service) policyVerdict(ctx context.Context, p *Preflight, c Caller, v *Validated, row *emailRow, o SendOptions, now time.Time) error {
	switch {
	case s.pol == nil:
		return p.record("policy", nil, "No sending policy applies on this node.")
	case o.CheckAtSendTime && v.SendAt != nil:
		return p.record("policy", nil, "Quotas, pauses and throttles are checked when the send is due.")
	}
	err := s.pol.Check(ctx, policySend(c.WorkspaceID, v.From.Email, row, v.SendAt != nil, now))
	return p.record("policy", err, "Within the workspace's quotas, caps and throttles, and no pause holds it.")
}

// suppressionVerdicts gives each recipient its verdict from the
// suppression list as it stands (a scheduled send is looked up again when
// due; suppressed then, it fails).
func (s *Service) suppressionVerdicts(ctx context.Context, p *Preflight, ws string, v *Validated) error {
	rs := v.Recipients()
	emails := make([]string, len(rs))
	for i, r := range rs {
		emails[i] = suppressions.Normalize(r.Email)
	}
	found, err := suppressions.Suppressed(ctx, s.db, ws, emails)
	if err != nil {
		return err
	}
	for i, r := range rs {
		vd := Verdict{Check: "suppression", OK: true, Recipient: r.Email, Message: r.Email + " is not on the suppression list."}
		if reason, ok := found[emails[i]]; ok {
			e := errSuppressed(r.Email, reason)
			vd.OK, vd.Code, vd.Message = false, e.Code, e.Message
		}
		p.Verdicts = append(p.Verdicts, vd)
	}
	return nil
}

// built builds and signs the message through delivery and keeps its header
// fields and size; a message delivery could not build is the "build"
// verdict.
func (s *Service) built(ctx context.Context, p *Preflight, v *Validated, row *emailRow, now time.Time) error {
	raw, err := s.preview.Preview(ctx, row.outgoing(trackFlags(v.TrackOpens, v.TrackClicks)), now)
	if err != nil {
		return p.record("build", err, "")
	}
	p.Headers, p.Size = headerFields(raw), len(raw)
	return nil
}

// outgoing is the row as the delivery engine reads it (LoadOutgoing), its
// attachments given decoded.
func (e *emailRow) outgoing(track int) *Outgoing {
	return &Outgoing{ID: e.ID, WorkspaceID: e.WorkspaceID, Status: e.Status, From: e.From, Subject: e.Subject, HTML: e.HTML, Text: e.Text,
		To: jsonText(e.To, "[]"), Cc: jsonText(e.Cc, "[]"), Bcc: jsonText(e.Bcc, "[]"), ReplyTo: jsonText(e.ReplyTo, "[]"),
		Headers: jsonText(e.Headers, "{}"), Attachments: "[]", Files: e.Attachments, Tags: jsonText(e.Tags, "{}"),
		Recipients: jsonText(e.Recipients, "[]"), TestMode: e.TestMode, MessageID: e.MessageID,
		TemplateID: e.TemplateID, TopicID: e.TopicID, Track: track, CreatedAt: e.CreatedAt}
}

// headerFields are the header section's fields, unfolded (RFC 5322 2.2.3),
// by name as written; a repeated name keeps each value on a line of its own.
func headerFields(raw []byte) map[string]string {
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	out := map[string]string{}
	var name string
	for _, line := range strings.Split(string(head), "\r\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') && name != "" {
			out[name] += line
			continue
		}
		k, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = k
		if prev, ok := out[name]; ok {
			out[name] = prev + "\n" + strings.TrimLeft(val, " \t")
		} else {
			out[name] = strings.TrimLeft(val, " \t")
		}
	}
	return out
}
