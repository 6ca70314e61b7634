package broadcasts

import (
	"context"
	"maps"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/contentcheck"
	"mailroom/internal/render"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// Recipients reads a page of the broadcast's recipients (in id order,
// after the id after or from offset) with its stats.
func (s *Service) Recipients(ctx context.Context, workspaceID, id, status string, limit, offset int, after string) ([]Recipient, Stats, error) {
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, Stats{}, err
	}
	switch status {
	case "", RcptPending, RcptSent, RcptDelivered, RcptBounced, RcptComplained, RcptFailed, RcptSkipped:
	default:
		return nil, Stats{}, apierr.InvalidRequest("status must be one of pending, sent, delivered, bounced, complained, failed, skipped.")
	}
	rs, err := listRecipients(ctx, s.c.DB, b.ID, status, limit, offset, after)
	if err != nil {
		return nil, Stats{}, err
	}
	st, err := s.Stats(ctx, b)
	return rs, st, err
}

// sampleVars are the merge fields of the member with address email (or
// the audience's first mailable member when email is ""), and the
// mailable size of the audience.
func (s *Service) sampleVars(ctx context.Context, b Broadcast, email string) (map[string]any, int, error) {
	v := render.MemberVars(email, "", "", "", nil)
	if b.AudienceID == "" && b.SegmentID == "" {
		return v, 0, nil
	}
	sel, err := s.selection(ctx, b)
	if err != nil {
		return v, 0, err
	}
	n, err := sel.WithReach(contacts.Mailable).Count(ctx)
	if err != nil {
		return v, 0, err
	}
	// One person is read: the member of that address (mailable or not: a
	// preview may show anyone), or the first mailable one.
	notMember := func() error {
		return apierr.NotFound("member").WithNext("Pass the email of a member of the broadcast's audience, or none for the first one.")
	}
	if email != "" {
		norm, err := contacts.NormalizeEmail(email)
		if err != nil {
			return v, n, notMember()
		}
		sel = sel.WithEmail(norm)
	} else {
		sel = sel.WithReach(contacts.Mailable)
	}
	ps, err := sel.WithLimit(1).List(ctx)
	if err != nil {
		return v, n, err
	}
	if len(ps) == 0 {
		if email != "" {
			return v, n, notMember()
		}
		return v, n, nil
	}
	return personVars(ps[0]), n, nil
}

func personVars(p contacts.Person) map[string]any {
	return render.MemberVars(p.Email, p.FirstName, p.LastName, p.ContactID, p.Attributes, p.MemberAttributes)
}

// Preview renders the broadcast for one member (or the first one).
func (s *Service) Preview(ctx context.Context, workspaceID, id, email string) (Rendered, error) {
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return Rendered{}, err
	}
	return s.preview(ctx, b, email)
}

// PreviewDraft renders a broadcast that is not stored; nothing is written.
func (s *Service) PreviewDraft(ctx context.Context, workspaceID string, in Input, email string) (Rendered, error) {
	b := Broadcast{WorkspaceID: workspaceID}
	if in.From != nil && *in.From != "" {
		a, err := sending.ParseAddress(*in.From)
		if err != nil {
			return Rendered{}, apierr.InvalidRequest("from %s.", err.Error())
		}
		b.From = a.String()
	}
	if err := s.apply(&b, in); err != nil {
		return Rendered{}, err
	}
	if b.AudienceID != "" {
		if _, err := s.c.Contacts.Audience(ctx, workspaceID, b.AudienceID); err != nil {
			return Rendered{}, err
		}
	}
	return s.preview(ctx, b, email)
}

func (s *Service) preview(ctx context.Context, b Broadcast, email string) (Rendered, error) {
	r, err := s.renderer(ctx, b)
	if err != nil {
		return Rendered{}, err
	}
	v, n, err := s.sampleVars(ctx, b, email)
	if err != nil {
		return Rendered{}, err
	}
	// The sample member's own links: the preview shows what they get.
	sample, _ := v["email"].(string)
	if sample == "" {
		sample = "member@example.invalid"
	}
	out, links, err := s.personal(b, r, v, sample, s.c.Clock.Now())
	if err != nil {
		return Rendered{}, err
	}
	var names []string
	if r.tpl != nil {
		names = r.tpl.Names()
	}
	if names == nil {
		names = []string{}
	}
	h := map[string]string{"From": b.From}
	if b.ReplyTo != "" {
		h["Reply-To"] = b.ReplyTo
	}
	for k, x := range links {
		h[k] = x
	}
	return Rendered{Subject: out.Subject, HTML: out.HTML, Text: out.Text, Headers: h, MergeFields: names, SampleSize: n, Sample: sample}, nil
}

// Test sends the draft, rendered with the first member's fields, to up to
// 5 addresses; the draft is unchanged. Suppressed addresses are skipped.
func (s *Service) Test(ctx context.Context, workspaceID, id string, to []string) (sent int, skipped []string, err error) {
	if len(to) == 0 {
		return 0, nil, apierr.InvalidRequest("to is required: an address or a list of up to %d.", MaxTestTo)
	}
	if len(to) > MaxTestTo {
		return 0, nil, apierr.InvalidRequest("A test goes to at most %d addresses; %d were given.", MaxTestTo, len(to))
	}
	addrs := make([]string, 0, len(to))
	for _, t := range to {
		a, err := sending.ParseAddress(t)
		if err != nil {
			return 0, nil, apierr.InvalidRequest("to %q %s.", t, err.Error())
		}
		addrs = append(addrs, strings.ToLower(a.Email))
	}
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return 0, nil, err
	}
	if b.Status != StatusDraft {
		return 0, nil, errNotDraft(b)
	}
	if (b.TemplateID == "" && (b.Subject == "" || (b.HTML == "" && b.Text == ""))) || b.From == "" {
		return 0, nil, apierr.Invalid422("broadcast_not_ready", "A test needs a subject and a body (or a template).")
	}
	// The first member's fields, but each test address's own links: a
	// member's unsubscribe link never reaches anyone else.
	r, err := s.renderer(ctx, b)
	if err != nil {
		return 0, nil, err
	}
	sampleVars, _, err := s.sampleVars(ctx, b, "")
	if err != nil {
		return 0, nil, err
	}
	sup, err := suppressions.Suppressed(ctx, s.c.DB, workspaceID, addrs)
	if err != nil {
		return 0, nil, err
	}
	var msgs []sending.MarketingEmail
	skipped = []string{}
	for _, a := range addrs {
		if _, ok := sup[a]; ok {
			skipped = append(skipped, a)
			continue
		}
		v := maps.Clone(sampleVars)
		out, headers, err := s.personal(b, r, v, a, s.c.Clock.Now())
		if err != nil {
			return 0, nil, err
		}
		msgs = append(msgs, sending.MarketingEmail{From: b.From, To: a, Subject: "[Test] " + out.Subject, HTML: out.HTML, Text: out.Text,
			Headers: headers, Tags: map[string]string{"broadcast_test": b.ID}})
	}
	err = s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		_, err := s.c.Sending.AcceptMarketing(ctx, tx, workspaceID, msgs, s.c.Clock.Now())
		return err
	})
	return len(msgs), skipped, err
}

var _ = render.Parse

// Preflight is a broadcast's dry run: what stops it from being sent, and
// the content checks of its html rendered for a sample member.
type Preflight struct {
	Problems []Problem
	Sample   string // the member it was rendered for; "" when it did not render
	Content  []contentcheck.Finding
}

// Preflight checks the broadcast without sending or writing anything: its
// Problems, and contentcheck over its body rendered for email (a member)
// or the first member. A body that does not render is one of its problems,
// and then has no content checks.
func (s *Service) Preflight(ctx context.Context, workspaceID, id, email string) (Preflight, error) {
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return Preflight{}, err
	}
	ps, err := s.Problems(ctx, b)
	if err != nil {
		return Preflight{}, err
	}
	out := Preflight{Problems: ps, Content: []contentcheck.Finding{}}
	r, err := s.preview(ctx, b, email)
	if err != nil {
		if _, ok := apierr.As(err); !ok || email != "" {
			return Preflight{}, err // a database error, or email is no member
		}
		return out, nil
	}
	out.Sample = r.Sample
	if r.HTML != "" || r.Text != "" {
		out.Content = contentcheck.Check(contentcheck.Content{HTML: r.HTML, Text: r.Text, Marketing: true})
	}
	return out, nil
}
