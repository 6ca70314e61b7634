package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/tracing"
)

// Worker runs jobs.DeliverArgs.
//
// Crash safety comes from the queue: a job whose node dies mid-transaction
// stays "running" until River's rescuer (MAILROOM_JOB_RESCUE_AFTER) hands
// it to another worker, which finds the email still 'sending' and sends to
// the recipients not yet recorded. A message may thus arrive twice, never
// zero times. Temporary failures are not job errors: the job snoozes until
// the next attempt of the retry schedule, which the email row counts, so
// rescues and snoozes never eat into each other.
type Worker struct {
	river.WorkerDefaults[jobs.DeliverArgs]
	Service *Service
}

// Work delivers one email.
func (w *Worker) Work(ctx context.Context, job *river.Job[jobs.DeliverArgs]) error {
	next, err := w.Service.Deliver(ctx, job.Args.WorkspaceID, job.Args.EmailID)
	if err != nil {
		return err
	}
	if next > 0 {
		return river.JobSnooze(next)
	}
	return nil
}

// Deliver makes one attempt at the email's owed recipients and records the
// outcome. It returns how long to wait before the next attempt when some
// recipients got a temporary failure (0 when every recipient is final), and
// an error only when the attempt should be repeated by the queue (database
// unreachable, job cancelled mid-send).
func (s *Service) Deliver(ctx context.Context, workspaceID, emailID string) (time.Duration, error) {
	return s.deliver(ctx, workspaceID, emailID, s.transactional)
}

// deliver is Deliver on lane l.
func (s *Service) deliver(ctx context.Context, workspaceID, emailID string, l lane) (time.Duration, error) {
	e, err := s.owed(ctx, workspaceID, emailID)
	if e == nil {
		return 0, err
	}
	return s.deliverEmail(ctx, e, l)
}

// deliverEmail makes the attempt at e, owed as read (deliver, or a batch's
// one read: loadBatch).
func (s *Service) deliverEmail(ctx context.Context, e *email, l lane) (time.Duration, error) {
	rcpts := e.recipients()
	e.mayKeep = slices.ContainsFunc(rcpts, func(r Recipient) bool { return r.Attempts > 0 }) // a retry
	now := s.clock.Now()
	jobStart := time.Now()
	traced := tracing.On()
	if traced {
		ctx = tracing.InEmail(ctx, e.ID)
	}
	ctx, span := startSpan(ctx, "email.deliver", attribute.String("mailroom.email_id", e.ID))
	defer span.End()

	if s.live != nil && s.live().Err() != nil {
		// The node lost its heartbeat: the others may be taking its work
		// over, so it starts no transaction until it beats again.
		return 0, errFenced
	}
	changed, send, holdWait, claimed, err := s.claim(ctx, e, rcpts, now)
	if err != nil {
		return 0, err
	}
	if len(send) > 0 && !claimed {
		return 0, nil // no longer to be sent
	}
	if len(send) == 0 {
		if len(changed) > 0 {
			if err := s.record(e, changed, nil, nil, now); err != nil && !errors.Is(err, errGone) {
				return 0, err
			}
		}
		return holdWait, nil
	}
	retry := e.mayKeep
	// A topic send's recipients each get their own message (personal
	// links), built as it is sent; any other email is built once.
	personal := s.personal(e)
	if !retry && traced {
		tracing.Span(ctx, "queue.wait", e.CreatedAt, jobStart)
	}
	var raw []byte
	if !personal {
		if raw, err = s.buildOnce(ctx, e, l, now, retry); errors.Is(err, errDone) {
			return 0, nil
		} else if err != nil {
			return 0, err
		}
		defer s.bufs.Put(raw) // sent and, when kept for a retry, written by then
	}

	if s.live != nil && s.live().Err() != nil {
		return 0, errFenced // lost while the message was built
	}

	env, err := s.envelope(ctx, e, send)
	if err != nil {
		return 0, err
	}
	// A node that loses its heartbeat stops its transactions in flight.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if s.live != nil {
		defer context.AfterFunc(s.live(), stop)()
	}
	started := time.Now()
	sctx, attempt := startSpan(sctx, "smtp.attempt", attribute.Int("mailroom.recipients", len(send)))
	defer attempt.End()
	results, failed, sendErr, err := s.transmit(sctx, e, env, raw, personal, l, now)
	if errors.Is(err, errDone) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	answered := time.Now()
	took := answered.Sub(started)
	settled, tried, byDomain := s.settle(e, rcpts, send, results, func(rcpt string) error {
		if personal {
			return failed[rcpt]
		}
		return sendErr
	}, now, took, attempt)
	changed = append(changed, settled...)
	attempt.End(trace.WithTimestamp(answered)) // its replies are its events, added above
	s.observeHolds(byDomain, now)
	next, deferred := s.nextAttempt(changed, holdWait)
	var keep []byte
	if deferred {
		keep = raw // a retry sends what this attempt signed
	}
	if err := s.record(e, changed, keep, tried, now); err != nil {
		if errors.Is(err, errGone) {
			return 0, nil
		}
		return 0, err
	}
	s.unsaved.Observe(time.Since(answered).Seconds())
	return next, nil
}

// owed is the email to deliver, nil when there is nothing to do: it is
// gone, another workspace's, past sending, or a test send (simulated by
// the sending area, never reaching a transport).
func (s *Service) owed(ctx context.Context, workspaceID, emailID string) (*email, error) {
	e, err := loadEmail(ctx, s.db, emailID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !e.deliverable(workspaceID) {
		return nil, nil
	}
	return e, nil
}

// deliverable says whether e, as read, is owed an attempt for the job of
// workspaceID: not another workspace's, not past sending, not a test send
// (simulated by the sending area, never reaching a transport).
func (e *email) deliverable(workspaceID string) bool {
	return e.WorkspaceID == workspaceID && (e.Status == sending.StatusQueued || e.Status == sending.StatusSending) && !e.TestMode
}

// buildOnce builds the message every recipient gets, on one of lane l's
// build slots. A message that cannot be built fails the email (errDone).
func (s *Service) buildOnce(ctx context.Context, e *email, l lane, now time.Time, retry bool) ([]byte, error) {
	l.builds <- struct{}{}
	raw, err := s.message(ctx, e, now, retry)
	<-l.builds
	var perm permanentError
	if errors.As(err, &perm) {
		return nil, s.failed(e, err, now)
	}
	return raw, err
}

// envelope is the attempt's SMTP envelope: the return path, the owed
// recipients, and the outbound address the policy picks.
func (s *Service) envelope(ctx context.Context, e *email, send []string) (outbound.Envelope, error) {
	from, err := s.returnPath(ctx, e)
	if err != nil {
		return outbound.Envelope{}, err
	}
	env := outbound.Envelope{From: from, To: send, WorkspaceID: e.WorkspaceID, EmailID: e.ID}
	if s.sources != nil {
		env.Source, err = s.sources.PickSource(ctx, e.WorkspaceID)
	}
	return env, err
}

// sendable splits the owed recipients: those suppressed since the send was
// accepted (checked again at send time: a bounce or complaint may have
// added them) are changed at once; those at a receiving domain held back
// wait, no attempt counted, until the hold ends (holdWait, see backoff);
// the rest are sent to now.
// sup is what the claim's batch read of the suppressions (readSuppressions);
// when nil they are read here, through q.
func (s *Service) sendable(ctx context.Context, q store.Querier, e *email, rcpts []Recipient, sup map[string]string, now time.Time) (changed []Recipient, send []string, holdWait time.Duration, err error) {
	if sup == nil {
		if sup, err = suppressions.Suppressed(ctx, q, e.WorkspaceID, owedAddrs(rcpts)); err != nil {
			return nil, nil, 0, err
		}
	}
	for i := range rcpts {
		r := &rcpts[i]
		if !r.owed() {
			continue
		}
		if reason, ok := sup[suppressions.Normalize(r.Email)]; ok {
			r.Status, r.Message = RcptSuppressed, "address is suppressed ("+reason+"); not sent"
			changed = append(changed, *r)
			continue
		}
		if until := s.backoff.held(domainOfAddr(r.Email), now); !until.IsZero() {
			if w := until.Sub(now); holdWait == 0 || w < holdWait {
				holdWait = w
			}
			continue
		}
		send = append(send, r.Email)
	}
	return changed, send, holdWait, nil
}

// claim splits the owed recipients (sendable) and, when any is to be sent,
// moves the email to sending under this attempt's fencing token, in one
// write: the suppressions are read inside it, with no read transaction of
// their own. claimed is false (and err nil) when the email is no longer
// to be sent.
func (s *Service) claim(ctx context.Context, e *email, rcpts []Recipient, now time.Time) (changed []Recipient, send []string, holdWait time.Duration, claimed bool, err error) {
	token := ids.Secret(8)
	var split []Recipient
	l := &lookup{workspaceID: e.WorkspaceID, addrs: owedAddrs(rcpts)}
	err = s.writes.DoReading(ctx, l, func(tx *store.Tx) error {
		// Run again if the shared commit fails: every result is set afresh.
		claimed, split = false, slices.Clone(rcpts)
		if changed, send, holdWait, err = s.sendable(ctx, tx, e, split, l.found, now); err != nil || len(send) == 0 {
			return err
		}
		ok, err := sending.MarkSending(ctx, tx, e.ID, token, now)
		claimed = ok
		return err
	})
	if err != nil {
		return nil, nil, 0, false, err
	}
	copy(rcpts, split)
	if claimed {
		e.claim = token
	}
	return changed, send, holdWait, claimed, nil
}

// owedAddrs lists the addresses of the recipients owed an attempt.
func owedAddrs(rcpts []Recipient) []string {
	var addrs []string
	for _, r := range rcpts {
		if r.owed() {
			addrs = append(addrs, r.Email)
		}
	}
	return addrs
}

// transmit hands the message to the transport: one transaction, or for a
// topic send one per recipient (personal, failed holds each one's error).
// err is set only when the attempt must not be recorded (the send was cut
// off, or the email can never go: then it is failed here).
func (s *Service) transmit(ctx context.Context, e *email, env outbound.Envelope, raw []byte, personal bool, l lane, now time.Time) (
	results map[string]outbound.RcptResult, failed map[string]error, sendErr, err error) {
	if personal {
		if results, failed, err = s.sendEach(ctx, e, env, now, l); err != nil {
			var perm permanentError
			if errors.As(err, &perm) {
				return nil, nil, nil, s.failed(e, err, now)
			}
			return nil, nil, nil, fmt.Errorf("delivery of %s interrupted: %w", e.ID, err)
		}
		return results, failed, nil, nil
	}
	results = map[string]outbound.RcptResult{}
	res, sendErr := s.transport.Send(ctx, env, raw)
	if sendErr != nil && ctx.Err() != nil {
		// Cancelled mid-transaction (shutdown or job timeout): nothing is
		// known about the recipients; the queue runs the job again.
		return nil, nil, nil, fmt.Errorf("delivery of %s interrupted: %w", e.ID, sendErr)
	}
	if res != nil {
		for _, rr := range res.Rcpts {
			results[rr.Rcpt] = rr
		}
	}
	return results, nil, sendErr, nil
}

// startSpan is tracing.Start while traces are exported (tracing.On); else
// it is ctx and a no-op span, and costs nothing: the global no-op tracer's
// spans, the email's root context and the reply events were some 30
// allocations per delivery (profiled).
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, noSpan
	}
	return tracing.Start(ctx, name, attrs...)
}

// noSpan is a span that records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// errDone says the job has nothing left to do (the email was failed).
var errDone = errors.New("delivery: done")

// failed ends an email that can never go out and says the job is done.
func (s *Service) failed(e *email, err error, now time.Time) error {
	if ferr := s.fail(e, err.Error(), now); ferr != nil {
		return ferr
	}
	return errDone
}

// settle turns the transport's answers into each sent recipient's new
// state (delivered, deferred while retries are left, else bounced), its
// attempt row and log line; errOf is the failure of a recipient no server
// answered for.
func (s *Service) settle(e *email, rcpts []Recipient, send []string, results map[string]outbound.RcptResult, errOf func(string) error,
	now time.Time, took time.Duration, attempt trace.Span) (changed []Recipient, tried []attemptRow, byDomain map[string][]outbound.RcptResult) {
	inFlight := make(map[string]bool, len(send))
	for _, a := range send {
		inFlight[a] = true
	}
	byDomain = map[string][]outbound.RcptResult{}
	for i := range rcpts {
		r := &rcpts[i]
		if !inFlight[r.Email] || !r.owed() {
			continue
		}
		rr, ok := results[r.Email]
		if !ok {
			// No per-recipient answer: the whole send failed before any
			// server spoke (or the envelope was refused locally).
			err := errOf(r.Email)
			rr = outbound.RcptResult{Rcpt: r.Email, Message: errText(err), Temporary: outbound.IsTemporary(err), Stage: outbound.StageConnect, Timeout: outbound.IsTimeout(err)}
		}
		d := domainOfAddr(r.Email)
		byDomain[d] = append(byDomain[d], rr)
		r.Attempts++
		r.Code, r.Enhanced, r.Message, r.temporary, r.Stage = rr.Code, rr.Enhanced, rr.Message, rr.Temporary, rr.Stage
		switch {
		case rr.OK:
			r.Status = RcptDelivered
		case rr.Temporary && r.Attempts <= len(s.retry):
			r.Status = RcptDeferred
		default:
			r.Status = RcptBounced
		}
		changed = append(changed, *r)
		if attempt.IsRecording() {
			attempt.AddEvent("reply", trace.WithAttributes(attribute.String("mx", rr.Host), attribute.String("remote_ip", rr.RemoteIP),
				attribute.String("tls", rr.TLS), attribute.Int("code", rr.Code), attribute.String("enhanced", rr.Enhanced), attribute.String("outcome", r.Status)))
		}
		tried = append(tried, attemptRow{Recipient: r.Email, Attempt: r.Attempts, At: now, Took: took, Outcome: r.Status, Result: rr})
		s.noteAttempt(e, *r, rr, took)
	}
	return changed, tried, byDomain
}

// observeHolds lets each receiving domain's answers hold it back (or clear it).
func (s *Service) observeHolds(byDomain map[string][]outbound.RcptResult, now time.Time) {
	for d, rrs := range byDomain {
		if h := s.backoff.observe(d, rrs, now); h != nil {
			s.holds.WithLabelValues(h.Reason).Inc()
			s.log.Warn("holding back a receiving domain", "domain", d, "reason", h.Reason,
				"for", h.Until.Sub(now).String(), "holds_in_a_row", h.Trips, "reply", h.Last)
		}
	}
}

// nextAttempt is the wait before the next attempt: the soonest retry of a
// deferred recipient, or of a held one (holdWait); deferred says whether
// any recipient was deferred.
func (s *Service) nextAttempt(changed []Recipient, holdWait time.Duration) (next time.Duration, deferred bool) {
	next = holdWait
	for _, r := range changed {
		if r.Status == RcptDeferred {
			if d := s.retry[r.Attempts-1]; next == 0 || d < next {
				next = d
			}
			deferred = true
		}
	}
	return next, deferred
}

func errText(err error) string {
	if err == nil {
		return "no answer from the receiving server"
	}
	return err.Error()
}

// permanentError is a failure no retry can fix (the message cannot be
// built, the sending domain lost its key).
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// message returns the signed bytes: those kept from an earlier attempt, or
// freshly built and signed once. The caller owns them and may give them to
// s.bufs once nothing reads them (after the attempt's outcome is recorded).
func (s *Service) message(ctx context.Context, e *email, now time.Time, retry bool) ([]byte, error) {
	if retry {
		raw, err := keptSigned(ctx, s.db, e.ID)
		if err == nil && len(raw) > 0 {
			return raw, nil
		}
	}
	_, build := startSpan(ctx, "build")
	defer build.End()
	if err := s.withBody(ctx, e); err != nil {
		return nil, err
	}
	m, err := e.build(now, s.svcDomain)
	if err != nil {
		return nil, permanentError{err}
	}
	if e.Track != 0 && s.links != nil {
		if m.HTML, err = s.links.Apply(ctx, e.WorkspaceID, e.ID, e.fromDomain(), e.Track, now, m.HTML); err != nil {
			return nil, err
		}
	}
	// Built and signed in reused buffers: a new buffer the size of the
	// message per message was a tenth of the allocation volume of a
	// broadcast, and past 32 KB a large allocation (profiled).
	raw, err := outbound.AppendBuild(s.bufs.Get(), m)
	if err != nil {
		s.bufs.Put(raw)
		return nil, permanentError{err}
	}
	signer, err := s.signer(ctx, e)
	if err != nil {
		s.bufs.Put(raw)
		return nil, err
	}
	build.End()
	if signer == nil {
		return raw, nil
	}
	_, sign := startSpan(ctx, "sign")
	defer sign.End()
	signed, err := signer.AppendSign(s.bufs.Get(), raw)
	s.bufs.Put(raw)
	if err != nil {
		s.bufs.Put(signed)
		return nil, err
	}
	return signed, nil
}

// noteAttempt writes the attempt's log line for one recipient (the
// operator's mail log: no body, no address but the recipient's domain) and
// moves the latency and deferral metrics. Outcome counters move with the
// events, after their commit (events.CountInto).
func (s *Service) noteAttempt(e *email, r Recipient, rr outbound.RcptResult, took time.Duration) {
	lane := e.class()
	domain := domainOfAddr(r.Email)
	switch r.Status {
	case RcptDelivered:
		s.meter.Latency(lane, time.Since(e.CreatedAt))
	case RcptDeferred:
		s.meter.Deferral(domain)
	}
	lvl := slog.LevelInfo
	if r.Status != RcptDelivered {
		lvl = slog.LevelWarn
	}
	if !s.log.Enabled(context.Background(), lvl) {
		return // its arguments alone were a dozen allocations
	}
	s.log.Log(context.Background(), lvl, "delivery attempt", "email_id", e.ID, "lane", lane, "recipient_domain", domain,
		"mx", rr.Host, "remote_ip", rr.RemoteIP, "tls", rr.TLS, "stage", rr.Stage, "code", rr.Code, "enhanced", rr.Enhanced,
		"reply", truncateReply(rr.Message), "attempt", r.Attempts, "duration_ms", took.Milliseconds(), "outcome", r.Status)
}

// truncateReply keeps log lines bounded: a server's reply can run to
// kilobytes.
func truncateReply(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
