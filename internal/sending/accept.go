package sending

import (
	"context"
	"encoding/json"
	"errors"
	"mailroom/internal/mailmetrics"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/mailauth"
	"mailroom/internal/outbound"
	"mailroom/internal/policy"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/tracing"
)

// MaxMessageSize is the spec's limit on the assembled message.
const MaxMessageSize = 40 * 1024 * 1024

// MaxBatch is the spec's limit on entries in one batch call.
const MaxBatch = 100

// Outcome is the answer to one accepted send: HTTP 200 {id, status:
// "queued"} or 202 {id, status: "scheduled"}. A repeat under the same
// idempotency key gets the first outcome back unchanged.
type Outcome struct {
	HTTPStatus int         `json:"-"`
	ID         string      `json:"id"`
	Status     EmailStatus `json:"status"`
	// ScheduledAt is when a booked email goes (zero when it goes now); only
	// SendOptions.InTx reads it, so replays need not carry it.
	ScheduledAt time.Time `json:"-"`
	// Preflight is a dry run's report (HTTP 200), in place of an id.
	Preflight *Preflight `json:"-"`
}

// Result is one entry of a batch: an Outcome or an error.
type Result struct {
	Outcome Outcome
	Err     error
}

// booking is one send on its way through validation, policy and the
// group commit.
type booking struct {
	caller Caller
	// policyAt and preparedAt time the accept's steps for its trace.
	policyAt, preparedAt time.Time
	v                    *Validated
	row                  *emailRow
	args                 []any                                                      // row.insertArgs(), encoded before the commit
	body                 []any                                                      // its bodies stored apart, or nil
	sim                  string                                                     // test-mode outcome played out in the accepting commit
	simDelay             time.Duration                                              // a scenario's wait (outcomeOf)
	simData              []byte                                                     // its events' data (eventData), encoded before the commit
	check                *supCheck                                                  // suppressions (sends going now) and a key taken on trust, read in the commit
	fp                   string                                                     // fingerprint, when an idempotency key is given
	key                  string                                                     // idempotency key reserved in memory ("" if none)
	ticket               *policy.Ticket                                             // what the policy counted, undone if not booked
	inTx                 func(ctx context.Context, tx *store.Tx, out Outcome) error // SendOptions.InTx
	// ownMessageID is the client's valid Message-ID, claimed in the commit.
	ownMessageID string

	// Set inside the transaction (possibly twice; see writeOp).
	outcome Outcome
	err     error
}

// SendOptions carries what a send takes from outside its body.
type SendOptions struct {
	// IdempotencyKey comes from a header (HTTP or SMTP Idempotency-Key):
	// the same as idempotency_key in the body; both given and different
	// answer 400 invalid_request.
	IdempotencyKey string
	// InTx, when set, runs in the transaction that accepts the email (not
	// on an idempotent replay), so the caller's own rows (inbound's sent
	// copy or booking) commit with it or not at all. It may run twice (a
	// shared batch rolled back, then alone), so it must only set state it
	// fully overwrites.
	InTx func(ctx context.Context, tx *store.Tx, out Outcome) error
	// MessageID is the client's own Message-ID (SMTP submission): the
	// email keeps it when it is a valid msg-id new to the workspace, else
	// gets one minted as any send does (docs/decisions.md).
	MessageID string
	// DryRun answers a preflight report for every entry and sends nothing
	// (?dry_run=true; an entry's own dry_run: true does the same).
	DryRun bool
	// CheckAtSendTime books a scheduled send after checking only its form:
	// quotas, pauses and throttles are checked when its time comes (as
	// suppression always is), as the spec has it for receive-side sends.
	CheckAtSendTime bool
}

// Send books one email from a raw JSON send request.
func (s *Service) Send(ctx context.Context, c Caller, raw []byte) (Outcome, error) {
	return s.SendWith(ctx, c, raw, SendOptions{})
}

// SendWith is Send with options from outside the body.
func (s *Service) SendWith(ctx context.Context, c Caller, raw []byte, o SendOptions) (Outcome, error) {
	res, err := s.book(ctx, c, []json.RawMessage{raw}, []string{o.IdempotencyKey}, false, o)
	if err != nil {
		return Outcome{}, err
	}
	return res[0].Outcome, res[0].Err
}

// errKeyGone is what a commit finds for a send whose key, taken on trust,
// has been revoked; book turns it into the key's own 401 (Caller.ConfirmKey).
var errKeyGone = errors.New("sending: the API key is gone")

// SendBatch books up to MaxBatch emails; each entry succeeds or fails on its
// own, and all accepted entries share the group commit.
func (s *Service) SendBatch(ctx context.Context, c Caller, raws []json.RawMessage) ([]Result, error) {
	return s.SendBatchWith(ctx, c, raws, SendOptions{})
}

// SendBatchWith is SendBatch with options from outside the body. A batch's
// idempotency key gives entry i the key "<key>/<i>" unless the entry names
// its own, so a retried batch replays every entry (docs/decisions.md).
func (s *Service) SendBatchWith(ctx context.Context, c Caller, raws []json.RawMessage, o SendOptions) ([]Result, error) {
	if len(raws) == 0 {
		return nil, apierr.BadRequest("empty_batch", "emails is empty; a batch carries 1 to %d emails.", MaxBatch)
	}
	if len(raws) > MaxBatch {
		return nil, apierr.BadRequest("batch_too_large", "The batch has %d emails; at most %d are allowed per call.", len(raws), MaxBatch).
			WithNext("Split the emails over several batch calls.")
	}
	keys := make([]string, len(raws))
	if o.IdempotencyKey != "" {
		for i := range keys {
			keys[i] = o.IdempotencyKey + "/" + strconv.Itoa(i)
		}
	}
	return s.book(ctx, c, raws, keys, true, SendOptions{DryRun: o.DryRun})
}

// workspaceInfo is what policy needs from the workspace row.
type workspaceInfo struct {
	ownerEmail string
	confirmed  bool
}

// callerWorkspace is the caller's workspace, from the caller when its key
// brought the owner.
func (s *Service) callerWorkspace(ctx context.Context, c Caller) (*workspaceInfo, error) {
	if c.OwnerEmail != "" {
		return &workspaceInfo{ownerEmail: c.OwnerEmail, confirmed: c.OwnerConfirmed}, nil
	}
	return s.workspace(ctx, c.WorkspaceID)
}

func (s *Service) workspace(ctx context.Context, id string) (*workspaceInfo, error) {
	w, err := s.workspaces.Workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	return &workspaceInfo{ownerEmail: strings.ToLower(w.OwnerEmail), confirmed: w.OwnerConfirmed}, nil
}

// book answers every entry of raws, or an error for the whole call: the
// caller's key, taken on trust, turned out to be revoked before anything
// was booked.
// keys[i] is entry i's idempotency key from outside its body, or "";
// batch says the keys were derived from a batch's key.
// o's InTx and MessageID apply to every entry (callers give them for one).
func (s *Service) book(ctx context.Context, c Caller, raws []json.RawMessage, keys []string, batch bool, o SendOptions) ([]Result, error) {
	out := make([]Result, len(raws))
	now := s.clock.Now().UTC()
	began := time.Now()
	reqs := make([]*Request, len(raws))
	for i, raw := range raws {
		reqs[i], out[i].Err = DecodeRequest(raw)
	}
	dry, err := dryRun(reqs, o.DryRun)
	if err != nil {
		return nil, err
	}
	if dry {
		return s.preflights(ctx, c, reqs, out, keys, batch, o, now)
	}
	var ws *workspaceInfo
	var wsErr error
	bookings := make([]*booking, len(raws))
	for i, req := range reqs {
		if req == nil {
			continue // out[i].Err says why
		}
		if ws == nil && wsErr == nil {
			ws, wsErr = s.callerWorkspace(ctx, c)
		}
		if wsErr != nil {
			out[i].Err = wsErr
			continue
		}
		b, replay, err := s.prepare(ctx, c, ws, req, keys[i], batch, o, now)
		if err != nil {
			out[i].Err = err
			continue
		}
		if replay != nil {
			out[i].Outcome = *replay
			continue
		}
		b.inTx = o.InTx
		b.preparedAt = time.Now()
		bookings[i] = b
	}
	waits := make([]<-chan error, len(raws))
	for i, b := range bookings {
		if b != nil {
			waits[i] = s.writer.submit(s.acceptOp(b), b.check)
		}
	}
	for i, b := range bookings {
		if b == nil {
			continue
		}
		var err error
		select {
		case err = <-waits[i]:
		case <-ctx.Done():
			// The write may still commit; the caller retries with its
			// idempotency key, as the spec advises after a timeout.
			err = ctx.Err()
		}
		if b.key != "" {
			s.inflight.release(c.WorkspaceID, b.key)
		}
		switch {
		case err != nil:
			out[i].Err = err
		case b.err != nil:
			out[i].Err = b.err
		default:
			out[i].Outcome = b.outcome
			if b.outcome.ID == b.row.ID && !b.row.TestMode {
				s.meter.Email(mailmetrics.Accepted, MailClass(b.row.Headers), len(b.row.To)+len(b.row.Cc)+len(b.row.Bcc))
			}
			if b.outcome.ID == b.row.ID {
				done := time.Now()
				tracing.Accepted(ctx, b.row.ID, c.WorkspaceID, began, done, tracing.Step{Name: "validate", Start: began, End: b.policyAt},
					tracing.Step{Name: "policy", Start: b.policyAt, End: b.preparedAt}, tracing.Step{Name: "commit", Start: b.preparedAt, End: done})
			}
		}
		if b.ticket != nil && ctx.Err() == nil && (out[i].Err != nil || out[i].Outcome.ID != b.row.ID) {
			b.ticket.Undo() // refused in the commit, or a replay: not a new send
		}
	}
	return s.confirmKey(ctx, c, bookings, out)
}

// confirmKey reads the caller's key again, when it was taken on trust,
// before any answer that no commit vouched for: an error, or a replay of an
// idempotent send. A revoked key gets its 401 for the whole call, unless a
// commit booked some entries before the revocation (a batch racing it):
// those keep their answers, and the others carry the 401.
func (s *Service) confirmKey(ctx context.Context, c Caller, bookings []*booking, out []Result) ([]Result, error) {
	if c.ConfirmKey == nil {
		return out, nil
	}
	vouched := 0
	for i := range out {
		if bookings[i] != nil && out[i].Err == nil {
			vouched++
		}
	}
	if vouched == len(out) {
		return out, nil
	}
	err := c.ConfirmKey(ctx)
	if err == nil {
		return out, nil
	}
	if vouched == 0 {
		return nil, err
	}
	for i := range out {
		if bookings[i] == nil || out[i].Err != nil {
			out[i] = Result{Err: err}
		}
	}
	return out, nil
}

// prepare decodes, validates and checks policy. It answers a replayed
// outcome for a known idempotency key, or a booking ready to commit.
// headerKey is the idempotency key from outside the body ("" for none); in
// a batch (derived) an entry's own key takes precedence over it.
// o.MessageID is the client's Message-ID, kept when valid (and, in the
// commit, new to the workspace).
func (s *Service) prepare(ctx context.Context, c Caller, ws *workspaceInfo, req *Request, headerKey string, batch bool, o SendOptions, now time.Time) (*booking, *Outcome, error) {
	ownID := o.MessageID
	v, err := s.validate(c, req, headerKey, batch, now)
	if err != nil {
		return nil, nil, err
	}
	b := &booking{caller: c, v: v}
	if v.IdempotencyKey != "" {
		b.fp = v.Fingerprint()
		replay, err := s.reserveInMemory(ctx, c.WorkspaceID, v.IdempotencyKey, b.fp, now)
		if err != nil || replay != nil {
			return nil, replay, err
		}
		b.key = v.IdempotencyKey
	}
	release := func() {
		if b.key != "" {
			s.inflight.release(c.WorkspaceID, b.key)
		}
	}
	if v.TemplateID != "" {
		if err := s.withTemplate(ctx, c.WorkspaceID, req, v); err != nil {
			release()
			return nil, nil, err
		}
	}
	if v.Topic != "" {
		if err := s.withTopic(ctx, c.WorkspaceID, v); err != nil {
			release()
			return nil, nil, err
		}
	}
	b.policyAt = time.Now() // the trace's policy step runs from here to the end of prepare
	if err := s.policy(ctx, c, ws, v); err != nil {
		release()
		return nil, nil, err
	}
	row, err := s.newRow(c, v, now)
	if err != nil {
		release()
		return nil, nil, err
	}
	if validMessageID(ownID) {
		row.MessageID, b.ownMessageID = ownID, ownID
	}
	if err := checkSize(v, row, now); err != nil {
		release()
		return nil, nil, err
	}
	if s.pol != nil && !(o.CheckAtSendTime && v.SendAt != nil) {
		if b.ticket, err = s.pol.Admit(ctx, policySend(c.WorkspaceID, v.From.Email, row, v.SendAt != nil, now)); err != nil {
			release()
			return nil, nil, err
		}
	}
	if row.TestMode && row.Status == StatusQueued {
		// A test send going now is played out in its accepting transaction
		// (no server is involved): the row is stored with its final status
		// and the events follow it in the same commit. The caller is still
		// told "queued", as for any send.
		b.sim, b.simDelay = outcomeOf(row.Recipients, s.serviceDomain)
		row.Status, row.LastError = simulatedStatus(b.sim, b.simDelay)
		// Encoded here, in the request's goroutine, so that the one
		// committer spends no time on it.
		if b.simData, err = row.eventDataJSON(); err != nil {
			release()
			return nil, nil, err
		}
	}
	b.row = row
	b.args, b.body = row.insertArgs(ClassTransactional)
	if v.SendAt == nil || c.ConfirmKey != nil {
		b.check = &supCheck{ws: c.WorkspaceID}
		if c.ConfirmKey != nil {
			b.check.key = c.KeyID
		}
	}
	// A test send (every recipient a reserved test address: mixing is
	// refused) is never looked up on the suppression list, so complained@
	// stays usable after its simulated complaint suppressed it; suppressed@
	// plays out its refusal in the simulation instead.
	if v.SendAt == nil && !row.TestMode {
		for _, r := range v.Recipients() {
			b.check.emails = append(b.check.emails, suppressions.Normalize(r.Email))
		}
	}
	return b, nil, nil
}

// validate applies the request's rules, with the idempotency key from
// outside its body (see prepare).
func (s *Service) validate(c Caller, req *Request, headerKey string, batch bool, now time.Time) (*Validated, error) {
	if headerKey != "" {
		switch {
		case req.IdempotencyKey == nil:
			req.IdempotencyKey = &headerKey
		case !batch && *req.IdempotencyKey != headerKey:
			return nil, apierr.InvalidRequest("The Idempotency-Key header and idempotency_key in the body differ; give one, or the same key in both.")
		}
	}
	return s.rules(c.WorkspaceID).Validate(req, now)
}

// policy applies the rules that need the database: the workspace may send,
// the from domain is the sandbox or a verified domain, the sandbox reaches
// only the workspace's own addresses. Suppression is checked in the
// accepting commit (see supCheck) for sends going now; scheduled sends are
// checked when their time comes.
func (s *Service) policy(ctx context.Context, c Caller, ws *workspaceInfo, v *Validated) error {
	if err := senderAllowed(c, ws, v); err != nil {
		return err
	}
	_, err := s.fromDomain(ctx, c.WorkspaceID, ws, v)
	return err
}

// senderAllowed refuses a workspace whose owner is unconfirmed and a key
// bound to another domain or address.
func senderAllowed(c Caller, ws *workspaceInfo, v *Validated) error {
	if !ws.confirmed {
		return apierr.Forbidden("sending_locked", "The workspace owner has not confirmed their email address yet, so sending is locked.").
			WithNext("Confirm the owner address, then retry.")
	}
	from := strings.ToLower(v.From.Email)
	domain := domainOf(from)
	if c.FromDomain != "" && domain != c.FromDomain {
		return apierr.Forbidden("insufficient_scope", "This API key may send only from %s; %s is another domain.", c.FromDomain, domain)
	}
	if c.FromAddress != "" && from != c.FromAddress {
		return apierr.Forbidden("insufficient_scope", "This API key is bound to mailbox %s and sends only as it; %s is another address.", c.FromAddress, from)
	}
	return nil
}

// fromDomain checks the from domain: on the service domain the sandbox
// rules (check "sandbox"), else that it is a verified domain of the
// workspace (check "domain").
func (s *Service) fromDomain(ctx context.Context, workspaceID string, ws *workspaceInfo, v *Validated) (check string, err error) {
	from := strings.ToLower(v.From.Email)
	domain := domainOf(from)
	if domain == s.serviceDomain {
		if from != s.sandboxFrom {
			return "sandbox", apierr.Invalid422("invalid_from_domain", "%s is not a verified domain of this workspace; on the service domain only the sandbox sender %s may send.", domain, s.sandboxFrom)
		}
		for _, r := range v.Recipients() {
			e := strings.ToLower(r.Email)
			if _, _, test := ClassifyTestAddress(e, s.serviceDomain); test || e == ws.ownerEmail {
				continue
			}
			return "sandbox", apierr.Invalid422("sandbox_recipient_not_allowed", "The sandbox sender %s reaches only the workspace's own addresses (%s and the test addresses); %s is not one.", s.sandboxFrom, ws.ownerEmail, r.Email).
				WithNext("Verify a domain of your own to send to anyone.")
		}
		return "sandbox", nil
	}
	status := ""
	if box := s.domains.Load(); box != nil && box.d != nil {
		st, err := box.d.SendingStatus(ctx, workspaceID, domain)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "domain", err
		}
		status = st
	}
	switch status {
	case "verified":
		return "domain", nil
	case "":
		return "domain", apierr.Invalid422("invalid_from_domain", "%s is not a domain of this workspace.", domain).
			WithNext("Add and verify the domain at /v1/domains, or send from " + s.sandboxFrom + " to your own address.")
	default:
		return "domain", apierr.Invalid422("domain_not_verified", "%s is added but its DNS records are not verified yet.", domain).
			WithNext("Publish the records shown at GET /v1/domains/{id}, then verify.")
	}
}

// checkSize assembles the message as the delivery engine will when it could
// come near the limit (attachments, or bodies over 1 MB) and refuses it over
// 40 MB.
func checkSize(v *Validated, row *emailRow, now time.Time) error {
	if v.AttachmentsBase64 == 0 && len(v.HTML)+len(v.Text) < 1<<20 {
		return nil
	}
	msg := outboundMessage(v.From, v.To, v.Cc, v.Bcc, v.ReplyTo, v.Subject, v.HTML, v.Text, v.Headers, v.Attachments, row.MessageID, now)
	b, err := outbound.Build(msg)
	if err != nil {
		return apierr.InvalidRequest("The message cannot be assembled: %s.", err.Error())
	}
	if len(b) > MaxMessageSize {
		return apierr.TooLarge("message_too_large",
			"The assembled message is %d bytes; at most %d (40 MB) are allowed.", len(b), MaxMessageSize).
			WithNext("Send large files as links instead of attachments.")
	}
	return nil
}

// acceptOp is the write of one booking inside a group commit: reserve the
// idempotency key (a unique row, so a race across nodes yields one email),
// add the email to the commit's accept batch a and, for sends going now,
// hand it to delivery there too.
func (s *Service) acceptOp(b *booking) acceptFunc {
	return func(ctx context.Context, tx *store.Tx, a *acceptBatch) error {
		b.outcome, b.err = Outcome{}, nil
		if b.check != nil && b.check.keyGone {
			b.err = errKeyGone
			return nil
		}
		if b.check != nil {
			for i, e := range b.check.emails {
				if reason, ok := b.check.found[e]; ok {
					b.err = errSuppressed(b.v.Recipients()[i].Email, reason)
					return nil
				}
			}
		}
		e := b.row
		if b.ownMessageID != "" {
			if err := s.ownMessageID(ctx, tx, b); err != nil {
				return err
			}
		}
		out := Outcome{HTTPStatus: apierr.StatusOK, ID: e.ID, Status: StatusQueued}
		if e.Status == StatusScheduled {
			out.HTTPStatus, out.Status, out.ScheduledAt = apierr.StatusAccepted, StatusScheduled, *e.ScheduledAt
		}
		if b.v.IdempotencyKey != "" {
			replay, err := reserveKey(ctx, tx, e.WorkspaceID, b.v.IdempotencyKey, b.fp, out, e.CreatedAt)
			if err != nil {
				if _, ok := apierr.As(err); ok {
					b.err = err
					return nil
				}
				return err
			}
			if replay != nil {
				b.outcome = *replay
				return nil
			}
		}
		// Nothing in the commit reads the row back, so it joins the
		// batch's accept statement (writeAccepted).
		a.add(b.args, b.body)
		bookTracking(tx, b, s.serviceDomain)
		// The first timeline entry (accepted or scheduled) is not written:
		// it is read back from the row itself (see acceptedEntry), which
		// saves the busiest transaction one insert per send.
		switch {
		case b.sim != "":
			ref := EmailRef{EmailID: e.ID, WorkspaceID: e.WorkspaceID, Outcome: b.sim, Delay: b.simDelay}
			if err := s.raiseSimulated(ctx, tx, ref, b.row.eventData, b.simData, e.CreatedAt); err != nil {
				return err
			}
		case e.Status == StatusQueued:
			if err := s.enqueueWork(ctx, tx, a, e); err != nil {
				return err
			}
		}
		if b.inTx != nil {
			if err := b.inTx(ctx, tx, out); err != nil {
				return err
			}
		}
		b.outcome = out
		return nil
	}
}

// errSuppressed is the refusal of a send to a suppressed recipient.
func errSuppressed(email, reason string) *apierr.Error {
	return apierr.Invalid422("recipient_suppressed", "%s is on the suppression list (%s); nothing was sent.", email, reason).
		WithNext("Do not retry. Remove the address at /v1/suppressions only if it asked to receive mail again.")
}

// ownMessageID keeps the client's Message-ID on the booking when the
// workspace has not used it, else mints one (a run may follow a rolled-back
// one, so each run starts from the client's).
func (s *Service) ownMessageID(ctx context.Context, tx *store.Tx, b *booking) error {
	e := b.row
	id := b.ownMessageID
	fresh, err := claimMessageID(ctx, tx, e.WorkspaceID, id, e.ID, e.CreatedAt)
	if err != nil {
		return err
	}
	if !fresh {
		id = outbound.MessageIDFor(e.ID, domainOf(b.v.From.Email))
	}
	if e.MessageID != id {
		e.MessageID = id
		b.args, b.body = e.insertArgs(ClassTransactional)
	}
	return nil
}

// enqueueWork hands a queued email to what carries it forward: for real
// recipients the delivery engine, through the commit's batch a (one
// deliver_batch job per commit, see writeAccepted); a test-mode email is
// played out at once in the same transaction (see simulateOne), since no
// server is involved.
func (s *Service) enqueueWork(ctx context.Context, tx *store.Tx, a *acceptBatch, e *emailRow) error {
	if e.TestMode {
		outcome, delay := outcomeOf(e.Recipients, s.serviceDomain)
		return s.simulateOne(ctx, tx, EmailRef{EmailID: e.ID, WorkspaceID: e.WorkspaceID, Outcome: outcome, Delay: delay})
	}
	a.deliver = append(a.deliver, jobs.EmailRef{EmailID: e.ID, WorkspaceID: e.WorkspaceID})
	return nil
}

// newRow turns a validated send into the row to store.
func (s *Service) newRow(c Caller, v *Validated, now time.Time) (*emailRow, error) {
	id := ids.New("em")
	e := &emailRow{
		ID:          id,
		WorkspaceID: c.WorkspaceID,
		APIKeyID:    c.KeyID,
		Status:      StatusQueued,
		From:        v.From.String(),
		To:          formatted(v.To),
		Cc:          formatted(v.Cc),
		Bcc:         formatted(v.Bcc),
		ReplyTo:     formatted(v.ReplyTo),
		Subject:     v.Subject,
		HTML:        v.HTML,
		Text:        v.Text,
		Headers:     v.Headers,
		Tags:        v.Tags,
		TestMode:    v.TestMode,
		MessageID:   outbound.MessageIDFor(id, domainOf(v.From.Email)),
		CreatedAt:   now,

		TemplateID:      v.TemplateID,
		TemplateVersion: v.TemplateVersion,
		TopicID:         v.TopicID,
	}
	for _, r := range v.Recipients() {
		e.Recipients = append(e.Recipients, strings.ToLower(r.Email))
	}
	for _, a := range v.Attachments {
		e.Attachments = append(e.Attachments, StoredAttachment{Filename: a.Filename, ContentType: a.ContentType, Content: a.Content, ContentID: a.ContentID})
	}
	if v.SendAt != nil {
		t := v.SendAt.UTC()
		e.ScheduledAt = &t
		e.Status = StatusScheduled
	}
	return e, nil
}

func formatted(as []Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

func domainOf(email string) string { return mailauth.DomainOf(email) }
