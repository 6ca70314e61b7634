package sending

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/jobs"
	"mailroom/internal/policy"
	"mailroom/internal/render"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// Automated is one email an automation step sends to its run's contact: a
// template (id or slug, its published version) rendered with Variables,
// from a checked sender, optionally under a topic.
type Automated struct {
	WorkspaceID string
	From        string
	To          string
	Template    string
	Variables   map[string]any
	Subject     string // "" keeps the template's subject
	Topic       string // "" for none; set, the email is marketing mail
	Tags        map[string]string
	// Links are the recipient's personal links for the send's topic id
	// ("" = every list); nil for a transactional send. Given, the body's
	// {{ unsubscribe_url }} and {{ preferences_url }} are them, a body
	// without the link gets the footer, and the one-click headers are set.
	Links func(topicID string) render.Links
}

// Prepared is an automated send validated, rendered and admitted by the
// policy, waiting for the caller's transaction (AcceptTx). Undo gives back
// what the policy counted when the transaction does not commit.
type Prepared struct {
	row      *emailRow
	sim      string
	simData  []byte
	simDelay time.Duration
	ticket   *policy.Ticket
	class    string
}

// Skipped reports whether err is a refusal that an automation records as a
// skipped send rather than a failure: the recipient opted out of the topic
// or is suppressed. Nothing was sent, and nothing should be.
func Skipped(err error) bool {
	return apierr.Is(err, "topic_opt_out") || apierr.Is(err, "recipient_suppressed")
}

// PrepareAutomated runs an automated send through the same rules as the
// send API: validation, the template, the topic (opt-outs answer
// topic_opt_out), the sender's domain and the policy. It writes nothing.
func (s *Service) PrepareAutomated(ctx context.Context, m Automated) (*Prepared, error) {
	now := s.clock.Now().UTC()
	tpl, err := json.Marshal(map[string]any{"id": m.Template, "variables": m.Variables})
	if err != nil {
		return nil, apierr.BadRequest("invalid_template", "template variables cannot be encoded.")
	}
	req := &Request{From: &m.From, To: []string{m.To}, Template: tpl, Tags: m.Tags}
	if m.Subject != "" {
		req.Subject = &m.Subject
	}
	if m.Topic != "" {
		req.Topic = &m.Topic
	}
	v, err := s.rules(m.WorkspaceID).Validate(req, now)
	if err != nil {
		return nil, err
	}
	// The topic first: the links in the body are for its id.
	if v.Topic != "" {
		if err := s.withTopic(ctx, m.WorkspaceID, v); err != nil {
			return nil, err
		}
	}
	if m.Links == nil {
		if err := s.withTemplate(ctx, m.WorkspaceID, req, v); err != nil {
			return nil, err
		}
	} else if err := s.withPersonalTemplate(ctx, m, req, v); err != nil {
		return nil, err
	}
	ws, err := s.workspace(ctx, m.WorkspaceID)
	if err != nil {
		return nil, err
	}
	c := Caller{WorkspaceID: m.WorkspaceID}
	if err := s.policy(ctx, c, ws, v); err != nil {
		return nil, err
	}
	row, err := s.newRow(c, v, now)
	if err != nil {
		return nil, err
	}
	if err := checkSize(v, row, now); err != nil {
		return nil, err
	}
	p := &Prepared{row: row, class: ClassTransactional}
	if v.Topic != "" || m.Links != nil {
		p.class = ClassMarketing
	}
	if row.TestMode {
		// As on the send API: a test address plays out its outcome in the
		// accepting transaction, and is never looked up on the list.
		p.sim, p.simDelay = outcomeOf(row.Recipients, s.serviceDomain)
		row.Status, row.LastError = simulatedStatus(p.sim, p.simDelay)
		if p.simData, err = row.eventDataJSON(); err != nil {
			return nil, err
		}
	}
	if s.pol != nil {
		if p.ticket, err = s.pol.Admit(ctx, policySend(m.WorkspaceID, v.From.Email, row, false, now)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// withPersonalTemplate renders the template with the recipient's links
// (render.Links: the variables, the footer when the body shows no link of
// its own, the one-click headers, which replace the topic's: same token).
func (s *Service) withPersonalTemplate(ctx context.Context, m Automated, req *Request, v *Validated) error {
	l := m.Links(v.TopicID)
	if l.Unsubscribe == "" { // no link can be made: no header, no footer
		return s.withTemplate(ctx, m.WorkspaceID, req, v)
	}
	vars := maps.Clone(m.Variables)
	if vars == nil {
		vars = map[string]any{}
	}
	l.Put(vars)
	tpl, err := json.Marshal(vars)
	if err != nil {
		return apierr.BadRequest("invalid_template", "template variables cannot be encoded.")
	}
	// The email records the step's variables, not the links (a token is
	// made again from the address whenever it is needed).
	own := v.TemplateVariables
	v.TemplateVariables = tpl
	err = s.withTemplate(ctx, m.WorkspaceID, req, v)
	v.TemplateVariables = own
	if err != nil {
		return err
	}
	out := render.AddFooter(render.Output{HTML: v.HTML, Text: v.Text}, l)
	v.HTML, v.Text = out.HTML, out.Text
	h := maps.Clone(v.Headers)
	if h == nil {
		h = map[string]string{}
	}
	maps.Copy(h, l.Headers())
	v.Headers = h
	return nil
}

// Undo gives back what the policy counted for a send that did not commit.
func (p *Prepared) Undo() {
	if p != nil && p.ticket != nil {
		p.ticket.Undo()
		p.ticket = nil
	}
}

// AcceptTx stores the prepared email in the caller's transaction with its
// delivery job (the marketing lane for marketing mail), so that the email
// exists exactly when the caller's own rows commit. A suppressed recipient
// answers recipient_suppressed and writes nothing.
func (s *Service) AcceptTx(ctx context.Context, tx *store.Tx, p *Prepared) (string, error) {
	e := p.row
	if p.sim == "" {
		found, err := suppressions.Suppressed(ctx, tx, e.WorkspaceID, e.Recipients)
		if err != nil {
			return "", err
		}
		for _, r := range e.Recipients {
			if reason, ok := found[r]; ok {
				return "", apierr.Invalid422("recipient_suppressed", "%s is on the suppression list (%s); nothing was sent.", r, reason)
			}
		}
	}
	var a acceptBatch
	a.add(e.insertArgs(p.class))
	writeAccepted(tx, &a)
	ref := jobs.EmailRef{EmailID: e.ID, WorkspaceID: e.WorkspaceID}
	switch {
	case p.sim != "":
		r := EmailRef{EmailID: e.ID, WorkspaceID: e.WorkspaceID, Outcome: p.sim, Delay: p.simDelay}
		if err := s.raiseSimulated(ctx, tx, r, e.eventData, p.simData, e.CreatedAt); err != nil {
			return "", err
		}
	case p.class == ClassMarketing:
		tx.AddJob(jobs.MarketingBatchArgs{Emails: []jobs.EmailRef{ref}})
	default:
		tx.AddJob(jobs.DeliverArgs{EmailID: e.ID, WorkspaceID: e.WorkspaceID})
	}
	return e.ID, nil
}
