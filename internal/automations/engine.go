package automations

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/events"
	"mailroom/internal/groupcommit"
	"mailroom/internal/jobs"
	"mailroom/internal/render"
	"mailroom/internal/rules"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/topics"
	"mailroom/internal/webhooks"
)

// Worker runs jobs.AutomationRunArgs: it carries a run forward from its
// committed position until the run waits or ends. Each step commits its
// outcome row, its effect (the email and its delivery job, the tag change,
// the timer job) and the run's new position in one transaction, so a crash
// at any moment leaves every step done once or not at all; the rerun of
// the job starts from the position that committed.
type Worker struct {
	river.WorkerDefaults[jobs.AutomationRunArgs]
	Service *Service
}

// batchConcurrency is how many runs of one job advance at once; their
// steps share commits.
const batchConcurrency = 16

// Work advances the job's runs. A failure of one is the job's (River
// retries it); the runs that advanced meanwhile find nothing to redo.
func (w *Worker) Work(ctx context.Context, job *river.Job[jobs.AutomationRunArgs]) error {
	ids := job.Args.RunIDs
	if job.Args.RunID != "" {
		ids = append([]string{job.Args.RunID}, ids...)
	}
	if len(ids) == 1 {
		return w.Service.Advance(ctx, job.Args.WorkspaceID, ids[0], job.Attempt)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, batchConcurrency)
	)
	for _, id := range ids {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := w.Service.Advance(ctx, job.Args.WorkspaceID, id, job.Attempt); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// Timeout lets a batch of runs take longer than one run.
func (w *Worker) Timeout(*river.Job[jobs.AutomationRunArgs]) time.Duration { return 10 * time.Minute }

type timersKey struct{}

// timers gathers the waits a transaction starts into one job per
// workspace and second of the wait's end (rounded up), added just before
// the commit: ten thousand runs waiting 1 s make a handful of jobs, not ten
// thousand. A run whose step rolled back (its savepoint) may stay in a
// job: when it fires the run is not waiting, and nothing happens.
func addTimer(tx *store.Tx, workspaceID, runID string, until time.Time) {
	type bucket struct {
		ws string
		at int64
	}
	m := tx.Local(timersKey{}, func() any {
		m := map[bucket][]string{}
		tx.BeforeFlush(func(context.Context, *store.Tx) error {
			for b, ids := range m {
				tx.AddJob(river.InsertManyParams{Args: jobs.AutomationRunArgs{RunIDs: ids, WorkspaceID: b.ws},
					InsertOpts: &river.InsertOpts{Queue: jobs.QueueAutomations, ScheduledAt: time.Unix(b.at, 0)}})
			}
			return nil
		})
		return m
	}).(map[bucket][]string)
	at := until.Unix()
	if until.After(time.Unix(at, 0)) {
		at++
	}
	k := bucket{workspaceID, at}
	m[k] = append(m[k], runID)
}

// webhookAttempts is how many times a webhook step is tried (River's
// backoff in between) before the run fails.
const webhookAttempts = 5

// Advance executes the run's steps until it waits, ends, or a step must be
// tried again later (an error: River retries the job).
func (s *Service) Advance(ctx context.Context, workspaceID, runID string, attempt int) error {
	for range 2 * MaxSteps {
		more, err := s.step(ctx, workspaceID, runID, attempt)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// programs caches compiled versions: a run's version never changes.
type programs struct {
	mu sync.Mutex
	m  map[string]*compiled
}

type compiled struct {
	prog   *program
	secret string
}

func (s *Service) program(ctx context.Context, automationID string, version int) (*compiled, error) {
	key := automationID + "@" + strconv.Itoa(version)
	s.progs.mu.Lock()
	c, ok := s.progs.m[key]
	s.progs.mu.Unlock()
	if ok {
		return c, nil
	}
	src, sealed, err := versionSource(ctx, s.db, automationID, version)
	if err != nil {
		return nil, err
	}
	secret, err := s.open(sealed)
	if err != nil {
		return nil, fmt.Errorf("reading automation %s version %d: %w", automationID, version, err)
	}
	def, problems := Parse([]byte(src))
	if len(problems) > 0 {
		return nil, fmt.Errorf("automation %s version %d no longer parses: %s", automationID, version, problems[0])
	}
	c = &compiled{prog: def.compile(), secret: secret}
	s.progs.mu.Lock()
	if len(s.progs.m) > 1000 {
		s.progs.m = map[string]*compiled{}
	}
	s.progs.m[key] = c
	s.progs.mu.Unlock()
	return c, nil
}

// effect is what a step did outside the transaction (rendering a send,
// calling a webhook), carried into it.
type effect struct {
	prep    *sending.Prepared
	skipped string // why a send is skipped
	failed  string // why the step failed
}

// step executes the step at the run's position. more reports that the run
// is still running and the next step may follow at once.
func (s *Service) step(ctx context.Context, workspaceID, runID string, attempt int) (more bool, err error) {
	r, err := runByID(ctx, s.db, workspaceID, runID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	now := s.clock.Now()
	if r.Status != RunRunning && r.Status != RunWaiting {
		return false, nil
	}
	if r.Status == RunWaiting && r.WaitUntil != nil && r.WaitUntil.After(now) {
		return false, nil // an early wake (a rescued job); the timer job comes at the wait's end
	}
	c, err := s.program(ctx, r.AutomationID, r.Version)
	if err != nil {
		return false, err
	}
	if r.PC < 0 || r.PC >= len(c.prog.nodes) {
		return false, s.db.InTx(ctx, func(tx *store.Tx) error {
			cur, err := lockRun(ctx, tx, workspaceID, runID)
			if err != nil || cur.Seq != r.Seq || cur.Status != r.Status {
				return err
			}
			cur.Status, cur.UpdatedAt, cur.FinishedAt = RunCompleted, now, &now
			return updateRun(ctx, tx, cur)
		})
	}
	n := c.prog.nodes[r.PC]
	var eff effect
	switch n.Step.Type {
	case "send":
		eff, err = s.prepareSend(ctx, r, n.Step.Send)
	case "webhook":
		eff, err = s.callWebhook(ctx, r, n, c.secret, attempt)
	}
	if err != nil {
		return false, err
	}
	stale := false
	err = s.write(ctx, func(ctx context.Context, tx *store.Tx) error {
		stale, more = false, false
		cur, err := lockRun(ctx, tx, workspaceID, runID)
		if err != nil {
			return err
		}
		if cur.Seq != r.Seq || (cur.Status != RunRunning && cur.Status != RunWaiting) {
			stale = true // another worker took this step, or the run was cancelled
			return nil
		}
		now := s.clock.Now()
		if cur.Status == RunWaiting {
			if err := closeWaitStep(ctx, tx, cur.ID, cur.Seq-1, StepCompleted, now); err != nil {
				return err
			}
			cur.Status, cur.WaitUntil = RunRunning, nil
		}
		if cur.Seq == 0 {
			if err := s.raise(ctx, tx, events.RunStarted, cur, nil, now); err != nil {
				return err
			}
		}
		// The steps that need nothing from outside the database (wait, if,
		// tag, set, exit) follow in this transaction: one commit for the
		// send and the wait after it, one for what follows a wait.
		node, e := n, eff // a retried transaction starts again from the first step
		for range len(c.prog.nodes) {
			if err := s.apply(ctx, tx, &cur, node, e, now); err != nil {
				return err
			}
			if cur.Status != RunRunning || cur.PC == end || cur.PC >= len(c.prog.nodes) {
				break
			}
			node, e = c.prog.nodes[cur.PC], effect{}
			if node.Step.Type == "send" || node.Step.Type == "webhook" {
				break
			}
		}
		if cur.Status == RunRunning && (cur.PC == end || cur.PC >= len(c.prog.nodes)) {
			cur.Status, cur.FinishedAt = RunCompleted, &now
		}
		cur.UpdatedAt = now
		if err := updateRun(ctx, tx, cur); err != nil {
			return err
		}
		more = cur.Status == RunRunning
		return nil
	})
	if err != nil || stale {
		eff.prep.Undo()
	}
	return more, err
}

// apply executes one step in tx and records it: its outcome row, the
// run's new position, and on a failure the run's end and its event.
func (s *Service) apply(ctx context.Context, tx *store.Tx, cur *Run, n pnode, eff effect, now time.Time) error {
	st := RunStep{Seq: cur.Seq, ID: n.ID, Type: n.Step.Type, Status: StepCompleted, StartedAt: now, FinishedAt: &now}
	next, fail, err := s.execute(ctx, tx, cur, n, &st, eff, now)
	if err != nil {
		return err
	}
	if fail != "" {
		st.Status, st.Error = StepFailed, &fail
		cur.Status, cur.Error, cur.FinishedAt = RunFailed, &fail, &now
		next = end
		if err := s.raise(ctx, tx, events.RunFailed, *cur, map[string]any{"step_id": n.ID, "error": fail}, now); err != nil {
			return err
		}
		if err := setLastError(ctx, tx, cur.AutomationID, fail, now); err != nil {
			return err
		}
	}
	cur.Seq++
	cur.PC = next
	return insertStep(ctx, tx, cur.WorkspaceID, cur.ID, st)
}

// write commits fn, shared with the steps other workers commit at the same
// moment (one commit, one fsync on SQLite, for many runs). Each step runs in
// its own savepoint: one that fails rolls back alone, with the email and
// jobs it queued.
func (s *Service) write(ctx context.Context, fn groupcommit.Func) error {
	if s.commits == nil {
		return s.db.InTx(ctx, func(tx *store.Tx) error { return fn(ctx, tx) })
	}
	return <-s.commits.Submit(struct{}{}, fn)
}

// Start runs the committer the steps share; Stop ends it. A step taken
// outside them commits alone.
func (s *Service) Start(ctx context.Context) error { return s.commits.Start(ctx) }

// Stop commits what is queued and stops the committer.
func (s *Service) Stop(context.Context) error {
	s.commits.Stop()
	return nil
}

// execute does the step's work inside the transaction and answers the
// next position, or why the step failed.
func (s *Service) execute(ctx context.Context, tx *store.Tx, r *Run, n pnode, st *RunStep, eff effect, now time.Time) (next int, fail string, err error) {
	next = n.Next
	switch n.Step.Type {
	case "send":
		switch {
		case eff.failed != "":
			return next, eff.failed, nil
		case eff.skipped != "":
			st.Status, st.Outcome = StepSkipped, eff.skipped
			return next, "", nil
		}
		id, err := s.sending.AcceptTx(ctx, tx, eff.prep)
		if sending.Skipped(err) {
			ae, _ := apierr.As(err)
			st.Status, st.Outcome = StepSkipped, ae.Message
			return next, "", nil
		}
		if err != nil {
			return next, "", err
		}
		st.EmailID = &id
		r.EmailsSent++
	case "wait":
		until := waitEnd(n.Step.Wait, now)
		st.Status, st.FinishedAt, st.Outcome = StepWaiting, nil, "until "+until.UTC().Format(time.RFC3339)
		r.Status, r.WaitUntil = RunWaiting, &until
		addTimer(tx, r.WorkspaceID, r.ID, until)
	case "if":
		p, err := s.person(ctx, tx, *r)
		if apierr.Is(err, "not_found") {
			return next, "the contact was deleted", nil
		}
		if err != nil {
			return next, "", err
		}
		if n.Step.If.Set.Match(p, now) {
			next, st.Outcome = n.Then, "then"
		} else {
			next, st.Outcome = n.Else, "else"
		}
	case "tag":
		_, err := s.contacts.ChangeTagsTx(ctx, tx, r.WorkspaceID, r.ContactID, n.Step.Tag.Add, n.Step.Tag.Remove)
		if ae, ok := apierr.As(err); ok {
			return next, contactFailure(ae), nil
		}
		if err != nil {
			return next, "", err
		}
	case "set":
		patch := map[string]*string{}
		for k, v := range n.Step.Set {
			if v == nil {
				patch[k] = nil
				continue
			}
			x := fmt.Sprint(v)
			patch[k] = &x
		}
		_, err := s.contacts.PatchAttributesTx(ctx, tx, r.WorkspaceID, r.ContactID, patch)
		if ae, ok := apierr.As(err); ok {
			return next, contactFailure(ae), nil
		}
		if err != nil {
			return next, "", err
		}
	case "webhook":
		if eff.failed != "" {
			return next, eff.failed, nil
		}
	case "exit":
		st.Outcome = n.Step.Exit
		r.Status, r.FinishedAt = RunStopped, &now
		next = end
	}
	return next, "", nil
}

func contactFailure(ae *apierr.Error) string {
	if ae.Code == "not_found" {
		return "the contact was deleted"
	}
	return ae.Message
}

// waitEnd is when a wait started at now ends: after its duration, or at
// the next until time of day (UTC) strictly after now.
func waitEnd(w *WaitStep, now time.Time) time.Time {
	if w.Until == "" {
		return now.Add(w.For)
	}
	hh, _ := strconv.Atoi(w.Until[:2])
	mm, _ := strconv.Atoi(w.Until[3:])
	u := now.UTC()
	at := time.Date(u.Year(), u.Month(), u.Day(), hh, mm, 0, 0, time.UTC)
	if !at.After(u) {
		at = at.AddDate(0, 0, 1)
	}
	return at
}

// person is the run's contact as it is now, as the segment rules read it.
func (s *Service) person(ctx context.Context, tx *store.Tx, r Run) (rules.Person, error) {
	c, err := contacts.ContactIn(ctx, tx, r.WorkspaceID, r.ContactID)
	if err != nil {
		return rules.Person{}, err
	}
	p := rules.Person{Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Attributes: c.Attributes, Tags: c.Tags, CreatedAt: c.CreatedAt}
	if r.AudienceID != "" {
		m, err := contacts.MemberIn(ctx, tx, r.AudienceID, r.ContactID)
		if err != nil && !apierr.Is(err, "not_found") {
			return p, err
		}
		if err == nil {
			p.Status, p.JoinedAt = m.Status, m.CreatedAt
			p.Attributes = maps.Clone(c.Attributes)
			maps.Copy(p.Attributes, m.Attributes) // merge fields over the contact's, as segments read them
		}
	}
	sup, err := suppressions.Suppressed(ctx, tx, r.WorkspaceID, []string{c.Email})
	if err != nil {
		return p, err
	}
	p.Suppressed = sup[c.Email] != ""
	// The rule topic reads the contact's own choices (without them every
	// contact would be subscribed to every topic).
	p.OptedOut, err = topics.OptedOut(ctx, tx, r.WorkspaceID, c.Email)
	return p, err
}

// prepareSend renders the send for the contact as it is now, with their
// own unsubscribe links unless the step is transactional, and runs it
// through the sending rules. A refusal the run should record (an opt-out,
// a suppression) is a skip; any other refusal fails the step.
func (s *Service) prepareSend(ctx context.Context, r Run, st *SendStep) (effect, error) {
	c, err := contacts.ContactIn(ctx, s.db, r.WorkspaceID, r.ContactID)
	if apierr.Is(err, "not_found") {
		return effect{failed: "the contact was deleted"}, nil
	}
	if err != nil {
		return effect{}, err
	}
	// The membership's merge fields over the contact's attributes, as a
	// broadcast to the audience that started the run would render them.
	var merge map[string]string
	if r.AudienceID != "" {
		m, err := contacts.MemberIn(ctx, s.db, r.AudienceID, r.ContactID)
		if err != nil && !apierr.Is(err, "not_found") {
			return effect{}, err
		}
		merge = m.Attributes
	}
	vars := render.MemberVars(c.Email, c.FirstName, c.LastName, c.ID, c.Attributes, merge)
	if s.contacts != nil {
		// Declared contact properties' fallbacks, as a broadcast renders them.
		fb, err := s.contacts.Fallbacks(ctx, r.WorkspaceID)
		if err != nil {
			return effect{}, err
		}
		for k, x := range fb {
			if _, ok := vars[k]; !ok {
				vars[k] = x
			}
		}
	}
	vars["trigger"] = r.TriggerData
	var links func(topicID string) render.Links
	if !st.Transactional && s.links != nil {
		links = func(topicID string) render.Links { return s.links(r.WorkspaceID, topicID, c.Email) }
	}
	p, err := s.sending.PrepareAutomated(ctx, sending.Automated{WorkspaceID: r.WorkspaceID, From: st.From, To: c.Email,
		Template: st.Template, Variables: vars, Subject: st.Subject, Topic: st.Topic, Links: links,
		Tags: map[string]string{"automation_id": r.AutomationID, "run_id": r.ID}})
	if ae, ok := apierr.As(err); ok {
		if sending.Skipped(err) {
			return effect{skipped: ae.Message}, nil
		}
		return effect{failed: ae.Code + ": " + ae.Message}, nil
	}
	if err != nil {
		return effect{}, err
	}
	return effect{prep: p}, nil
}

// webhookBody is what a webhook step posts: the shape of an event
// delivery, so receivers verify it the same way.
type webhookBody struct {
	ID        string         `json:"id"`
	Event     string         `json:"event"`
	Timestamp string         `json:"timestamp"`
	Sequence  int            `json:"sequence"`
	Data      map[string]any `json:"data"`
}

// WebhookEvent names the webhook step's deliveries (x-svc-event).
const WebhookEvent = "automation.webhook"

// callWebhook posts the step, signed with the automation's secret, through
// the webhooks area's client (SSRF-checked at connect). The id is the
// same on every attempt, for the receiver to drop repeats: a crash after
// the call and before the step commits calls again.
func (s *Service) callWebhook(ctx context.Context, r Run, n pnode, secret string, attempt int) (effect, error) {
	now := s.clock.Now()
	id := r.ID + "." + strconv.Itoa(r.Seq)
	body, err := json.Marshal(webhookBody{ID: id, Event: WebhookEvent, Timestamp: now.UTC().Format(time.RFC3339), Data: map[string]any{
		"run_id": r.ID, "automation_id": r.AutomationID, "version": r.Version, "step_id": n.ID,
		"contact_id": r.ContactID, "email": r.Email, "trigger": r.TriggerData}})
	if err != nil {
		return effect{}, err
	}
	a := webhooks.Deliver(ctx, s.hookClient, n.Step.Webhook, nil, nil, id, WebhookEvent, body, webhooks.Sign(now, body, secret), now)
	if a.Success {
		return effect{}, nil
	}
	if attempt < webhookAttempts {
		return effect{}, fmt.Errorf("webhook step %s: %s", n.ID, a.Err) // River tries again after its backoff
	}
	return effect{failed: "webhook: " + a.Err}, nil
}

// raise records a run event (automation.run.started, .failed) in tx.
func (s *Service) raise(ctx context.Context, tx *store.Tx, kind string, r Run, extra map[string]any, now time.Time) error {
	data := map[string]any{"run_id": r.ID, "automation_id": r.AutomationID, "version": r.Version, "contact_id": r.ContactID, "email": r.Email}
	maps.Copy(data, extra)
	_, err := events.Raise(ctx, tx, events.Event{WorkspaceID: r.WorkspaceID, Type: kind, CreatedAt: now, Data: data})
	return err
}
