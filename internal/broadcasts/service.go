package broadcasts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/mailauth"
	"mailroom/internal/render"
	"mailroom/internal/secretbox"
	"mailroom/internal/segments"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/templates"
	"mailroom/internal/topics"
	"mailroom/internal/tracking"
)

// Limits.
const (
	BatchSize     = 100 // recipients handed to delivery per transaction
	MaxTestTo     = 5
	MaxScheduleIn = 30 * 24 * time.Hour
)

// Domains says whether a sending domain is verified (*domains.Service).
type Domains interface {
	SendingStatus(ctx context.Context, workspaceID, domain string) (string, error)
}

// Topics reads a broadcast's topic by id or key, archived or not
// (*topics.Service); a missing one is an apierr not found.
type Topics interface {
	Get(ctx context.Context, workspaceID, ref string) (topics.Topic, error)
}

// Config builds a Service.
type Config struct {
	DB            *store.DB
	Clock         clock.Clock
	Contacts      *contacts.Service
	Segments      *segments.Service
	Templates     *templates.Service
	Sending       *sending.Service
	Domains       Domains
	Topics        Topics // nil: topic_id names nothing and opts nobody out
	Box           *secretbox.Box
	PublicURL     string
	ServiceDomain string
	// Links are a recipient's personal links for a topic ("" = every
	// list): the one-click unsubscribe URL, the preference page and the
	// List-Unsubscribe header made from the same token
	// (topics.Service.Links); nil: none, no header, no footer.
	Links func(workspaceID, topicID, email string, at time.Time) Links
}

// Links are one recipient's personal links (topics.MailLinks).
type Links = render.Links

// Service serves broadcasts and runs their fan-out.
type Service struct {
	c       Config
	links   atomic.Int32 // a LinkMode: SetLinks, for bench/broadcast's baselines
	sending renderers    // the renderers of broadcasts being delivered (Body)
}

// LinkMode says where broadcasts rendered from now on carry personal
// links: bench/broadcast -footer-cost measures what each costs.
type LinkMode int32

const (
	LinksEverywhere  LinkMode = iota // headers, merge tags and the footer (always, outside the bench)
	LinksHeadersOnly                 // the one-click headers alone, as before a body could show them
	LinksNone                        // none: no headers, no merge tags, no footer
)

// SetLinks sets where personal links go.
func (s *Service) SetLinks(m LinkMode) { s.links.Store(int32(m)) }

// New builds the service.
func New(c Config) *Service {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return &Service{c: c}
}

// Position is where a newest-first listing continues.
type Position struct {
	At int64
	ID string
}

// Input is a broadcast to create or, with nil fields untouched, a patch.
type Input struct {
	From        *string
	Name        *string
	ReplyTo     *string
	Subject     *string
	HTML        *string
	Text        *string
	AudienceID  *string
	SegmentID   *string
	TopicID     *string
	TemplateID  *string
	TrackOpens  *bool
	TrackClicks *bool
	// TemplateVersionID sends that version of the template, not the
	// published one; a new template_id without it clears it.
	TemplateVersionID *string
	// UnsubscribeFooter false leaves the footer out (problems[] then
	// asks for the link in the body).
	UnsubscribeFooter *bool
}

func errNotFound() error { return apierr.NotFound("broadcast") }

func (s *Service) apply(b *Broadcast, in Input) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&b.Name, in.Name)
	set(&b.Subject, in.Subject)
	set(&b.HTML, in.HTML)
	set(&b.Text, in.Text)
	set(&b.AudienceID, in.AudienceID)
	set(&b.SegmentID, in.SegmentID)
	set(&b.TopicID, in.TopicID)
	if in.TemplateID != nil && *in.TemplateID != b.TemplateID {
		b.TemplateVersionID = ""
	}
	set(&b.TemplateID, in.TemplateID)
	set(&b.TemplateVersionID, in.TemplateVersionID)
	if b.TemplateVersionID != "" && b.TemplateID == "" {
		return apierr.InvalidRequest("template_version_id needs template_id.")
	}
	if in.UnsubscribeFooter != nil {
		b.Footer = *in.UnsubscribeFooter
	}
	if in.ReplyTo != nil {
		if *in.ReplyTo != "" {
			a, err := sending.ParseAddress(*in.ReplyTo)
			if err != nil {
				return apierr.InvalidRequest("reply_to %s.", err.Error())
			}
			*in.ReplyTo = a.String()
		}
		b.ReplyTo = *in.ReplyTo
	}
	if in.TrackOpens != nil {
		b.TrackOpens = *in.TrackOpens
	}
	if in.TrackClicks != nil {
		b.TrackClicks = *in.TrackClicks
	}
	if strings.ContainsAny(b.Subject, "\r\n") {
		return apierr.InvalidRequest("subject must be one line.")
	}
	if len(b.HTML) > 1<<20 || len(b.Text) > 1<<20 {
		return apierr.InvalidRequest("html and text are at most 1 MB each.")
	}
	return nil
}

// Create stores a draft. from is required; everything else may come later
// and what is missing is listed in the problems.
func (s *Service) Create(ctx context.Context, workspaceID string, in Input) (Broadcast, []Problem, error) {
	if in.From == nil || strings.TrimSpace(*in.From) == "" {
		return Broadcast{}, nil, apierr.InvalidRequest("from is required: an address or \"Name <address>\" on a verified domain.")
	}
	a, err := sending.ParseAddress(*in.From)
	if err != nil {
		return Broadcast{}, nil, apierr.InvalidRequest("from %s.", err.Error())
	}
	now := s.c.Clock.Now()
	b := Broadcast{ID: ids.New("bc"), WorkspaceID: workspaceID, From: a.String(), Status: StatusDraft, Footer: true, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(&b, in); err != nil {
		return b, nil, err
	}
	if err := s.resolveTopic(ctx, &b); err != nil {
		return b, nil, err
	}
	if err := insertBroadcast(ctx, s.c.DB, b); err != nil {
		return b, nil, err
	}
	p, err := s.Problems(ctx, b)
	return b, p, err
}

// Get reads a broadcast.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (Broadcast, error) {
	b, err := broadcastByID(ctx, s.c.DB, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return b, errNotFound()
	}
	return b, err
}

// List reads broadcasts newest first.
func (s *Service) List(ctx context.Context, workspaceID string, limit int, before *Position) ([]Broadcast, error) {
	return listBroadcasts(ctx, s.c.DB, workspaceID, limit, before)
}

// Stats counts the broadcast's recipients by current status and, when it
// tracks opens or clicks, sums its emails' counters.
func (s *Service) Stats(ctx context.Context, b Broadcast) (Stats, error) {
	st, err := recipientStats(ctx, s.c.DB, b.ID)
	if err != nil || !(b.TrackOpens || b.TrackClicks) {
		return st, err
	}
	st.Engagement, err = tracking.EngagementOf(ctx, s.c.DB, b.WorkspaceID, recipientEmailIDs, b.ID)
	return st, err
}

func errNotDraft(b Broadcast) error {
	return apierr.New(apierr.StatusConflict, "broadcast_not_draft", "The broadcast is %s; only a draft can be changed.", b.Status).
		WithNext("Create a new broadcast to send something else.")
}

// Update edits a draft (from is not patchable: the handler refuses it).
func (s *Service) Update(ctx context.Context, workspaceID, id string, in Input) (Broadcast, []Problem, error) {
	var b Broadcast
	err := s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if b, err = lockBroadcast(ctx, tx, workspaceID, id); err != nil {
			return err
		}
		if b.Status != StatusDraft {
			return errNotDraft(b)
		}
		if err := s.apply(&b, in); err != nil {
			return err
		}
		if err := s.resolveTopic(ctx, &b); err != nil {
			return err
		}
		b.UpdatedAt = s.c.Clock.Now()
		return updateBroadcast(ctx, tx, b)
	})
	if errors.Is(err, store.ErrNotFound) {
		return b, nil, errNotFound()
	}
	if err != nil {
		return b, nil, err
	}
	p, err := s.Problems(ctx, b)
	return b, p, err
}

// Cancel stops a scheduled or sending broadcast: no batch commits after
// this returns (each batch re-reads the status under the row's lock), the
// recipients not yet handed over are skipped, and so are those whose
// emails delivery had not yet taken up (cancelled); only messages already
// being sent go. A draft is cancelled
// too (nothing was sent); a sent or cancelled one answers 409.
func (s *Service) Cancel(ctx context.Context, workspaceID, id string) (Broadcast, error) {
	// The cancel locks many emails rows while delivery's batches lock some
	// of them too: PostgreSQL may pick the cancel as a deadlock victim, and
	// a victim's transaction was rolled back whole, so it runs again.
	for attempt := 1; ; attempt++ {
		b, err := s.cancelOnce(ctx, workspaceID, id)
		if !store.IsDeadlock(err) || attempt == 5 {
			return b, err
		}
	}
}

func (s *Service) cancelOnce(ctx context.Context, workspaceID, id string) (Broadcast, error) {
	var b Broadcast
	err := s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if b, err = lockBroadcast(ctx, tx, workspaceID, id); err != nil {
			return err
		}
		switch b.Status {
		case StatusDraft, StatusScheduled, StatusSending:
		default:
			return apierr.New(apierr.StatusConflict, "broadcast_not_cancellable", "The broadcast is already %s.", b.Status)
		}
		now := s.c.Clock.Now()
		b.Status, b.CancelledAt, b.UpdatedAt = StatusCancelled, &now, now
		if err := updateBroadcast(ctx, tx, b); err != nil {
			return err
		}
		if err := skipPending(ctx, tx, b.ID, "cancelled", now); err != nil {
			return err
		}
		// What delivery has not taken up yet does not go either.
		handed, err := handedOver(ctx, tx, b.ID)
		if err != nil {
			return err
		}
		stopped, err := sending.CancelQueued(ctx, tx, b.WorkspaceID, handed)
		if err != nil {
			return err
		}
		return unsend(ctx, tx, b.ID, stopped, now)
	})
	if errors.Is(err, store.ErrNotFound) {
		return b, errNotFound()
	}
	return b, err
}

// SendResult is the answer of a send.
type SendResult struct {
	Broadcast  Broadcast
	Queued     int
	Batches    int
	Skipped    int
	Recipients int
}

// Send sends a draft now (snapshotting its recipients) or books it for at.
func (s *Service) Send(ctx context.Context, workspaceID, id string, at *time.Time) (SendResult, error) {
	var res SendResult
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return res, err
	}
	if b.Status != StatusDraft {
		return res, errNotDraft(b)
	}
	now := s.c.Clock.Now()
	if at != nil {
		if !at.After(now) {
			return res, apierr.InvalidRequest("scheduled_at must be in the future.")
		}
		if at.Sub(now) > MaxScheduleIn {
			return res, apierr.InvalidRequest("scheduled_at is at most 30 days out.")
		}
	}
	probs, err := s.Problems(ctx, b)
	if err != nil {
		return res, err
	}
	if len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, p := range probs {
			msgs[i] = p.Message
		}
		return res, apierr.Invalid422("broadcast_not_ready", "The broadcast cannot be sent yet: %s", strings.Join(msgs, " ")).
			WithNext("Fix each problem (GET the broadcast lists them), then send again.")
	}
	sel, err := s.selection(ctx, b)
	if err != nil {
		return res, err
	}
	err = s.c.DB.InTx(ctx, func(tx *store.Tx) error {
		cur, err := lockBroadcast(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if cur.Status != StatusDraft {
			return errNotDraft(cur)
		}
		b = cur
		b.UpdatedAt = now
		args := jobs.BroadcastArgs{BroadcastID: b.ID, WorkspaceID: b.WorkspaceID}
		if at != nil {
			t := at.UTC()
			b.Status, b.ScheduledAt = StatusScheduled, &t
			opts := args.InsertOpts()
			opts.ScheduledAt = t
			tx.AddJob(river.InsertManyParams{Args: args, InsertOpts: &opts})
			return updateBroadcast(ctx, tx, b)
		}
		b.Status, b.StartedAt = StatusSending, &now
		if err := snapshot(ctx, tx, b, sel, now); err != nil {
			return fmt.Errorf("snapshotting recipients: %w", err)
		}
		// Counted in the snapshot's transaction: once it commits, the
		// fan-out may hand recipients over before a later count.
		pending, skipped, err := countRecipients(ctx, tx, b.ID)
		if err != nil {
			return err
		}
		res.Queued, res.Skipped, res.Recipients = pending, skipped, pending+skipped
		res.Batches = (pending + BatchSize - 1) / BatchSize
		tx.AddJob(args)
		return updateBroadcast(ctx, tx, b)
	})
	if err != nil {
		return SendResult{}, err
	}
	res.Broadcast = b
	return res, nil
}

// resolveTopic stores a topic named by its key as the topic's id, so the
// broadcast keeps pointing at it; one that names no topic is kept as
// written and listed in the problems (unknown_topic).
func (s *Service) resolveTopic(ctx context.Context, b *Broadcast) error {
	if b.TopicID == "" || s.c.Topics == nil {
		return nil
	}
	t, err := s.c.Topics.Get(ctx, b.WorkspaceID, b.TopicID)
	if err != nil {
		if _, ok := apierr.As(err); ok {
			return nil
		}
		return err
	}
	b.TopicID = t.ID
	return nil
}

// selection is who the broadcast goes to: the audience's members, narrowed
// by the segment's rules when it has one. A segment alone (the Resend SDKs'
// broadcasts) goes to its own audience's members or, for a segment over
// the workspace, to the contacts subscribed to some live audience (consent
// stays a membership's). With a topic, those who switched it off are
// skipped (topic_opt_out). A topic that names nothing opts nobody out: the
// problems list it, so such a broadcast does not send.
func (s *Service) selection(ctx context.Context, b Broadcast) (contacts.PeopleQuery, error) {
	sel := s.c.Contacts.People(b.WorkspaceID).WithAudience(b.AudienceID)
	if b.SegmentID != "" {
		seg, err := s.c.Segments.Lookup(ctx, b.WorkspaceID, b.SegmentID)
		if err != nil {
			return sel, err
		}
		if b.AudienceID == "" {
			sel = sel.WithAudience(seg.AudienceID)
		}
		sel = sel.WithRules(seg.Set())
	}
	if b.TopicID != "" && s.c.Topics != nil {
		t, err := s.c.Topics.Get(ctx, b.WorkspaceID, b.TopicID)
		if err == nil {
			sel = sel.WithTopic(contacts.TopicOptIn{ID: t.ID, DefaultOptIn: t.DefaultOptIn, Required: t.Required})
		} else if _, ok := apierr.As(err); !ok {
			return sel, err
		}
	}
	return sel, nil
}

// Problems lists what stops the broadcast from being sent.
func (s *Service) Problems(ctx context.Context, b Broadcast) ([]Problem, error) {
	ps := &problems{list: []Problem{}}
	if err := s.recipientProblems(ctx, &b, ps); err != nil {
		return nil, err
	}
	names, err := s.contentProblems(ctx, b, ps)
	if err != nil {
		return nil, err
	}
	if !b.Footer && len(ps.list) == 0 && !s.showsUnsubscribe(ctx, b) {
		ps.add("no_unsubscribe_link", "The body shows no unsubscribe link and unsubscribe_footer is off: put {{ unsubscribe_url }} (or *|UNSUB|*) in the body, or turn unsubscribe_footer on.")
	}
	if dom := domainOf(b.From); !strings.EqualFold(dom, s.c.ServiceDomain) && s.c.Domains != nil {
		st, err := s.c.Domains.SendingStatus(ctx, b.WorkspaceID, dom)
		if err != nil {
			return nil, err
		}
		if st != "verified" {
			ps.add("from_domain_not_verified", "The from domain %s is not verified: verify it (POST /v1/domains/{id}/verify) or send from a verified domain.", dom)
		}
	}
	if err := s.sampleProblems(ctx, b, names, ps); err != nil {
		return nil, err
	}
	return ps.list, nil
}

// problems collects a broadcast's problems in the order they are found.
type problems struct{ list []Problem }

func (ps *problems) add(code, format string, a ...any) {
	ps.list = append(ps.list, Problem{code, fmt.Sprintf(format, a...)})
}

// missing adds the problem when err is another area's refusal (the thing
// named does not exist) and answers any other error.
func (ps *problems) missing(err error, code, format string, a ...any) error {
	if _, ok := apierr.As(err); !ok {
		return err
	}
	ps.add(code, format, a...)
	return nil
}

// recipientProblems checks the audience, segment and topic the broadcast
// names; an audience that does not exist leaves nobody to sample (b's
// audience and segment are cleared).
func (s *Service) recipientProblems(ctx context.Context, b *Broadcast, ps *problems) error {
	switch {
	case b.AudienceID == "" && b.SegmentID == "":
		ps.add("no_audience", "No audience: set audience_id to the audience this broadcast goes to (or segment_id to a segment).")
	case b.AudienceID != "":
		if _, err := s.c.Contacts.Audience(ctx, b.WorkspaceID, b.AudienceID); err != nil {
			if err := ps.missing(err, "unknown_audience", "Audience %s does not exist (or was deleted): choose another audience_id.", b.AudienceID); err != nil {
				return err
			}
			b.AudienceID, b.SegmentID = "", "" // nobody to sample below
		}
	}
	if b.SegmentID != "" {
		seg, err := s.c.Segments.Lookup(ctx, b.WorkspaceID, b.SegmentID)
		switch {
		case err != nil:
			if err := ps.missing(err, "unknown_segment", "Segment %s does not exist: choose another segment_id or remove it.", b.SegmentID); err != nil {
				return err
			}
		case b.AudienceID != "" && seg.AudienceID != "" && seg.AudienceID != b.AudienceID:
			ps.add("segment_audience", "Segment %s belongs to audience %s, not to this broadcast's audience: choose a segment of the same audience.", seg.ID, seg.AudienceID)
		}
	}
	if b.TopicID != "" && s.c.Topics != nil {
		t, err := s.c.Topics.Get(ctx, b.WorkspaceID, b.TopicID)
		switch {
		case err != nil:
			return ps.missing(err, "unknown_topic", "Topic %s does not exist: set topic_id to a topic's id or key (GET /v1/topics lists them), or remove it.", b.TopicID)
		case t.Archived():
			ps.add("topic_archived", "Topic %s is archived: restore it (PATCH /v1/topics/%s with {\"archived\": false}) or choose another topic.", t.Key, t.ID)
		}
	}
	return nil
}

// contentProblems checks the template, or the subject and body written in
// the broadcast; it answers the merge fields such a body uses.
func (s *Service) contentProblems(ctx context.Context, b Broadcast, ps *problems) (names []string, err error) {
	if b.TemplateID == "" {
		if strings.TrimSpace(b.Subject) == "" {
			ps.add("no_subject", "No subject: add one.")
		}
		if strings.TrimSpace(b.HTML) == "" && strings.TrimSpace(b.Text) == "" {
			ps.add("no_body", "No body: add html or text, or choose a template with template_id.")
		} else if t, err := b.body(); err != nil {
			ps.add("invalid_body", "The body does not parse as a template: %s.", err.Error())
		} else {
			names = t.Names()
		}
		return names, nil
	}
	t, err := s.c.Templates.Get(ctx, b.WorkspaceID, b.TemplateID)
	switch {
	case err != nil:
		return nil, ps.missing(err, "unknown_template", "Template %s does not exist: choose another template_id.", b.TemplateID)
	case b.TemplateVersionID != "":
		if _, err := s.c.Templates.Pinned(ctx, b.WorkspaceID, b.TemplateID, b.TemplateVersionID); err != nil {
			return nil, ps.missing(err, "unknown_template_version", "Template %s has no version %s: choose one of its versions, or remove template_version_id to send the published one.", t.ID, b.TemplateVersionID)
		}
	case !t.Sendable():
		ps.add("template_not_published", "Template %s has no published version: publish one (POST /v1/templates/%s/publish).", t.ID, t.ID)
	}
	return nil, nil
}

// sampleProblems samples up to 1,000 mailable members: none is a problem,
// and so is a merge field (of names) that none of them has.
func (s *Service) sampleProblems(ctx context.Context, b Broadcast, names []string, ps *problems) error {
	if b.AudienceID == "" && b.SegmentID == "" {
		return nil
	}
	sel, err := s.selection(ctx, b)
	if err != nil {
		return nil // a selection that cannot be made is another problem's
	}
	sample, err := sel.WithReach(contacts.Mailable).WithLimit(1000).List(ctx)
	if err != nil {
		return err
	}
	if len(sample) == 0 {
		ps.add("empty_audience", "Nobody to send to: the audience (or segment) has no subscribed, unsuppressed member.")
	}
	fb, err := s.c.Contacts.Fallbacks(ctx, b.WorkspaceID)
	if err != nil {
		return err
	}
	for _, n := range unknownFields(names, sample, fb) {
		ps.add("unknown_merge_field", "The body uses {{ %s }}, which no member has: add the attribute to members or remove it from the body.", n)
	}
	return nil
}

// showsUnsubscribe renders the broadcast for a sample member with a marker
// link and reports whether each part it has shows it; a body that does not
// render is another problem's, so it counts as showing it.
func (s *Service) showsUnsubscribe(ctx context.Context, b Broadcast) bool {
	const mark = "https://unsubscribe.invalid/check"
	r, err := s.renderer(ctx, b)
	if err != nil {
		return true
	}
	v := render.MemberVars("member@example.com", "Ada", "Lovelace", "")
	render.Links{Unsubscribe: mark, Preferences: mark}.Put(v)
	out, err := r.render(v)
	if err != nil {
		return true
	}
	return (out.HTML == "" || strings.Contains(out.HTML, mark)) && (out.Text == "" || strings.Contains(out.Text, mark))
}

// unknownFields are the names the body uses that neither the builtins,
// a declared property's fallback nor any sampled member's attributes supply.
func unknownFields(names []string, sample []contacts.Person, fallbacks map[string]string) []string {
	var out []string
	for _, n := range names {
		root := strings.SplitN(n, ".", 2)[0]
		if _, ok := fallbacks[root]; ok || builtins[root] || root == render.UnsubscribeURL || root == render.PreferencesURL || strings.HasPrefix(n, "!") {
			continue
		}
		found := false
		for _, p := range sample {
			if _, ok := p.Attributes[root]; ok {
				found = true
				break
			}
			if _, ok := p.MemberAttributes[root]; ok {
				found = true
				break
			}
		}
		if !found {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func domainOf(addr string) string {
	a, err := sending.ParseAddress(addr)
	if err != nil {
		return ""
	}
	return mailauth.DomainOf(a.Email)
}

// Rendered is a message rendered for one member (or sample values).
type Rendered struct {
	Subject, HTML, Text string
	Headers             map[string]string
	MergeFields         []string
	SampleSize          int
	Sample              string // the member rendered for (member@example.invalid when none)
}

// renderer renders the broadcast for members; it parses once. A template
// broadcast renders the version published when the renderer was made, read
// once: a version published meanwhile does not change the rest of a
// fan-out, and no member costs a read of the template.
type renderer struct {
	// fallbacks are the workspace's declared contact properties' fallbacks,
	// read once: a member lacking the attribute renders the fallback.
	fallbacks map[string]string
	tpl       *render.Template
	pub       *templates.PublishedVersion
	pubErr    error // the template cannot be sent: each member is skipped with it
	// bodyOnly renders no subject (Output.Subject is empty): the renderer
	// of Body, whose email stores the subject the fan-out rendered.
	bodyOnly bool

	// footer says, from one render with marker links, which parts show no
	// unsubscribe link (they get the footer without a scan per member).
	footer     sync.Once
	footerHTML bool
	footerText bool
	footerScan bool // a part shows a link or a footer: check each member
}

// footerParts renders once with marker links and notes which parts lack one.
func (r *renderer) footerParts() {
	const mark = "https://unsubscribe.invalid/mark"
	v := render.MemberVars("member@example.com", "Ada", "Lovelace", "")
	render.Links{Unsubscribe: mark, Preferences: mark}.Put(v)
	out, err := r.render(v)
	if err != nil {
		r.footerScan = true
		return
	}
	r.footerHTML = !strings.Contains(out.HTML, mark) && !strings.Contains(out.HTML, render.FooterMark)
	r.footerText = !strings.Contains(out.Text, mark)
	r.footerScan = !r.footerHTML || !r.footerText
}

// renderer makes the renderer of a preview, a test or the problems: with
// the fallbacks declared now.
func (s *Service) renderer(ctx context.Context, b Broadcast) (*renderer, error) {
	fb, err := s.c.Contacts.Fallbacks(ctx, b.WorkspaceID)
	if err != nil {
		return nil, err
	}
	return s.rendererWith(ctx, b, fb)
}

// sendRenderer makes the renderer of the fan-out and of Body: once a
// broadcast began sending, with the fallbacks it pinned, so every render
// of a recipient is the same whatever is declared later.
func (s *Service) sendRenderer(ctx context.Context, b Broadcast) (*renderer, error) {
	fb, err := pinnedFallbacks(ctx, s.c.DB, b.WorkspaceID, b.ID)
	if err != nil || fb == nil {
		return s.renderer(ctx, b)
	}
	return s.rendererWith(ctx, b, fb)
}

func (s *Service) rendererWith(ctx context.Context, b Broadcast, fb map[string]string) (*renderer, error) {
	var err error
	r := &renderer{fallbacks: fb}
	if b.TemplateID == "" {
		t, err := b.body()
		if err != nil {
			return nil, apierr.InvalidRequest("The body does not parse as a template: %s.", err.Error())
		}
		r.tpl = t
		return r, nil
	}
	var pub *templates.PublishedVersion
	if b.TemplateVersionID != "" {
		pub, err = s.c.Templates.Pinned(ctx, b.WorkspaceID, b.TemplateID, b.TemplateVersionID)
	} else {
		pub, err = s.c.Templates.Published(ctx, b.WorkspaceID, b.TemplateID)
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		r.pubErr = err
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	r.pub = pub
	return r, nil
}

func (r *renderer) render(v map[string]any) (render.Output, error) {
	return r.renderWith(v, render.Footer{})
}

// renderWith renders with footer f: a broadcast's own body writes it as it
// renders (no second copy of each recipient's body), a template's is added.
func (r *renderer) renderWith(v map[string]any, f render.Footer) (render.Output, error) {
	r.fill(v)
	switch {
	case r.tpl != nil && r.bodyOnly:
		return r.tpl.RenderBodyWith(v, f)
	case r.tpl != nil:
		return r.tpl.RenderForSendWith(v, f)
	case r.pubErr != nil:
		return render.Output{}, r.pubErr
	}
	out, err := r.pub.Render(v)
	if err != nil {
		return out.Output, err
	}
	return f.AddTo(out.Output), nil
}

// fill gives v the fallbacks of the fields it lacks.
func (r *renderer) fill(v map[string]any) {
	for k, x := range r.fallbacks {
		if _, ok := v[k]; !ok {
			v[k] = x
		}
	}
}

// subject renders the subject alone, with render's checks first: the
// fan-out's test of who can be rendered (Body renders the rest when the
// message is sent).
func (r *renderer) subject(v map[string]any) (string, error) {
	r.fill(v)
	switch {
	case r.tpl != nil:
		return r.tpl.Subject(v)
	case r.pubErr != nil:
		return "", r.pubErr
	}
	return r.pub.Subject(v)
}

// subjectShowsLinks says whether the subject names a personal link: the
// fan-out makes each member's links (two MACs) only then.
func (r *renderer) subjectShowsLinks() bool {
	switch {
	case r.tpl != nil:
		return r.tpl.SubjectShowsLinks()
	case r.pub != nil:
		return r.pub.SubjectShowsLinks()
	}
	return false
}

// personal renders the broadcast for one recipient with their own links:
// {{ unsubscribe_url }} and {{ preferences_url }} in the body, the RFC 8058
// one-click headers (the topics area's signed links: without a topic they
// unsubscribe from every list), and the footer when the body shows no
// unsubscribe link of its own (render.AddFooter). Links are only ever this
// recipient's: each message has one recipient.
func (s *Service) personal(b Broadcast, r *renderer, v map[string]any, email string, at time.Time) (render.Output, map[string]string, error) {
	l := s.personalLinks(b, v, email, at)
	var f render.Footer
	scan := false
	if b.Footer && l.Unsubscribe != "" && LinkMode(s.links.Load()) == LinksEverywhere {
		r.footer.Do(r.footerParts)
		if scan = r.footerScan; !scan {
			f = render.FooterOf(l, r.footerHTML, r.footerText)
		}
	}
	out, err := r.renderWith(v, f)
	if err != nil || l.Unsubscribe == "" {
		return out, nil, err
	}
	if scan {
		out = render.AddFooter(out, l)
	}
	return out, l.Headers(), nil
}

// personalLinks makes the recipient's links as of at and puts them in v.
func (s *Service) personalLinks(b Broadcast, v map[string]any, email string, at time.Time) Links {
	var l Links
	mode := LinkMode(s.links.Load())
	if s.c.Links != nil && email != "" && mode != LinksNone {
		l = s.c.Links(b.WorkspaceID, b.TopicID, email, at)
		if mode == LinksEverywhere {
			l.Put(v)
		}
	}
	return l
}

// Duplicate copies a broadcast, whatever its status, as a new draft named
// "<name> (copy)" with the same content and recipients (the Resend SDKs'
// broadcasts.duplicate); nothing of its sending is copied.
func (s *Service) Duplicate(ctx context.Context, workspaceID, id string) (Broadcast, error) {
	b, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return b, err
	}
	name := b.Name
	if name == "" {
		name = b.Subject
	}
	now := s.c.Clock.Now()
	c := Broadcast{ID: ids.New("bc"), WorkspaceID: workspaceID, Name: name + " (copy)", From: b.From, ReplyTo: b.ReplyTo,
		Subject: b.Subject, HTML: b.HTML, Text: b.Text, AudienceID: b.AudienceID, SegmentID: b.SegmentID, TopicID: b.TopicID,
		TemplateID: b.TemplateID, TrackOpens: b.TrackOpens, TrackClicks: b.TrackClicks, Status: StatusDraft, Footer: b.Footer,
		CreatedAt: now, UpdatedAt: now}
	if b.Status == StatusDraft {
		c.TemplateVersionID = b.TemplateVersionID // a sent one's is the version its run recorded, not one asked for
	}
	return c, insertBroadcast(ctx, s.c.DB, c)
}
