package automations

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
)

// Run statuses (the spec's "Automation run"). running: between steps;
// waiting: inside a wait step; the other four are final.
const (
	RunRunning   = "running"
	RunWaiting   = "waiting"
	RunCompleted = "completed" // the last step done
	RunStopped   = "stopped"   // an exit step
	RunFailed    = "failed"    // a step failed; error says why
	RunCancelled = "cancelled" // DELETE on a waiting run, or on its automation
)

// RunStatuses lists them, for the ?status filter.
var RunStatuses = []string{RunRunning, RunWaiting, RunCompleted, RunStopped, RunFailed, RunCancelled}

// Step outcomes.
const (
	StepCompleted = "completed"
	StepSkipped   = "skipped" // a send to an opted-out or suppressed contact: nothing sent, the run goes on
	StepFailed    = "failed"
	StepWaiting   = "waiting" // a wait not over yet
	StepCancelled = "cancelled"
)

// Runs listed: the spec's default 50, max 200.
const (
	DefaultRuns = 50
	MaxRuns     = 200
	// MaxTriggerData bounds the data of an api.call trigger, encoded.
	MaxTriggerData = 32 << 10
)

// Run is one contact's pass through one version of an automation.
type Run struct {
	ID, WorkspaceID, AutomationID string
	Version                       int
	ContactID, Email, AudienceID  string
	Status                        string
	TriggerKey                    string
	TriggerData                   map[string]any
	PC, Seq                       int // next step's index; steps executed
	EmailsSent                    int
	Error                         *string
	WaitUntil                     *time.Time
	CreatedAt, UpdatedAt          time.Time
	FinishedAt                    *time.Time
	Steps                         []RunStep
}

// RunStep is one executed step of a run.
type RunStep struct {
	Seq        int
	ID, Type   string
	Status     string
	Outcome    string // if: then/else; exit: its reason; skipped send: why
	EmailID    *string
	Error      *string
	StartedAt  time.Time
	FinishedAt *time.Time
}

// TriggerInput is POST /v1/automations/{id}/trigger: the contact (by id,
// or by address, created when new), the caller's idempotency key and the
// data templates read as {{ trigger.<name> }}.
type TriggerInput struct {
	ContactID, Email string
	IdempotencyKey   string
	Data             map[string]any
}

func newRun(a Automation, contactID, email, audienceID, key string, data map[string]any, now time.Time) Run {
	if data == nil {
		data = map[string]any{}
	}
	return Run{ID: ids.New("run"), WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Version: a.Version, ContactID: contactID,
		Email: email, AudienceID: audienceID, Status: RunRunning, TriggerKey: key, TriggerData: data, CreatedAt: now, UpdatedAt: now}
}

// Trigger starts a run of an api.call automation for one contact. A second
// call with the same idempotency key answers 409 duplicate (naming the
// first run), whatever its body.
func (s *Service) Trigger(ctx context.Context, workspaceID, ref string, in TriggerInput) (Run, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return Run{}, err
	}
	if a.Trigger != EventAPICall {
		return Run{}, apierr.Invalid422("trigger_not_api_call", "This automation starts on %s, not on an API call.", a.Trigger).
			WithNext("Only automations whose trigger is event: api.call start from POST .../trigger.")
	}
	if !a.Enabled {
		return Run{}, apierr.Invalid422("automation_disabled", "This automation is disabled; it starts no run.").
			WithNext("Enable it with PATCH /v1/automations/{id} { \"enabled\": true }.")
	}
	if b, err := json.Marshal(in.Data); err != nil || len(b) > MaxTriggerData {
		return Run{}, apierr.InvalidRequest("data is larger than %d KiB once encoded.", MaxTriggerData>>10)
	}
	key := "api:" + in.IdempotencyKey
	if id, err := runIDByKey(ctx, s.db, a.ID, key); err == nil {
		return Run{}, errDuplicate(id)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Run{}, err
	}
	c, err := s.triggerContact(ctx, workspaceID, in)
	if err != nil {
		return Run{}, err
	}
	r := newRun(a, c.ID, c.Email, "", key, in.Data, s.clock.Now())
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if err := insertRun(ctx, tx, r); err != nil {
			return err
		}
		tx.AddJob(jobs.AutomationRunArgs{RunID: r.ID, WorkspaceID: workspaceID})
		return nil
	})
	if store.IsUniqueViolation(err) {
		id, _ := runIDByKey(ctx, s.db, a.ID, key)
		return Run{}, errDuplicate(id) // a concurrent call with the key won
	}
	return r, err
}

func errDuplicate(runID string) error {
	return apierr.Conflict("duplicate", "A run was already triggered with this idempotency_key (%s); no new run started.", runID).
		WithNext("Use a new idempotency_key for a new run; GET .../runs/"+runID+" shows the first.").With("run_id", runID)
}

// triggerContact finds the trigger's contact: by id, or by address,
// creating the contact when the address is new (decisions.md).
func (s *Service) triggerContact(ctx context.Context, workspaceID string, in TriggerInput) (contacts.Contact, error) {
	if in.ContactID != "" {
		return s.contacts.Get(ctx, workspaceID, in.ContactID)
	}
	email, err := contacts.NormalizeEmail(in.Email)
	if err != nil {
		return contacts.Contact{}, apierr.InvalidRequest("email %s.", err.Error())
	}
	c, err := s.contacts.ContactByEmail(ctx, workspaceID, email)
	if !apierr.Is(err, "not_found") {
		return c, err
	}
	c, err = s.contacts.Create(ctx, workspaceID, contacts.NewContact{Email: email})
	if apierr.Is(err, "contact_exists") {
		return s.contacts.ContactByEmail(ctx, workspaceID, email) // created meanwhile
	}
	return c, err
}

// Position is a place in the newest-first list of runs: the last run read's
// created_at (unix milliseconds) and id.
type Position struct {
	At int64
	ID string
}

// Runs lists an automation's runs, newest first, optionally of one status,
// those older than before when it is set.
func (s *Service) Runs(ctx context.Context, workspaceID, ref, status string, before *Position, limit int) ([]Run, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return nil, err
	}
	rs, err := listRuns(ctx, s.db, workspaceID, a.ID, status, before, limit)
	if err != nil {
		return nil, err
	}
	return rs, s.withSteps(ctx, rs)
}

func (s *Service) withSteps(ctx context.Context, rs []Run) error {
	if len(rs) == 0 {
		return nil
	}
	runIDs := make([]string, len(rs))
	for i, r := range rs {
		runIDs[i] = r.ID
	}
	steps, err := stepsOf(ctx, s.db, runIDs)
	if err != nil {
		return err
	}
	for i := range rs {
		rs[i].Steps = steps[rs[i].ID]
		if rs[i].Steps == nil {
			rs[i].Steps = []RunStep{}
		}
	}
	return nil
}

// Run reads one run with every executed step.
func (s *Service) Run(ctx context.Context, workspaceID, ref, runID string) (Run, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return Run{}, err
	}
	r, err := runByID(ctx, s.db, workspaceID, runID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.AutomationID != a.ID) {
		return Run{}, apierr.NotFound("run")
	}
	if err != nil {
		return Run{}, err
	}
	rs := []Run{r}
	err = s.withSteps(ctx, rs)
	return rs[0], err
}

// CancelRun cancels a waiting run: its timer, when it fires, finds nothing
// to do. A run in any other status answers 409 run_not_waiting.
func (s *Service) CancelRun(ctx context.Context, workspaceID, ref, runID string) (Run, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return Run{}, err
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		r, err := lockRun(ctx, tx, workspaceID, runID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && r.AutomationID != a.ID) {
			return apierr.NotFound("run")
		}
		if err != nil {
			return err
		}
		if r.Status != RunWaiting {
			return apierr.Conflict("run_not_waiting", "The run is %s; only a waiting run can be cancelled.", r.Status)
		}
		now := s.clock.Now()
		if err := closeWaitStep(ctx, tx, r.ID, r.Seq-1, StepCancelled, now); err != nil {
			return err
		}
		r.Status, r.UpdatedAt, r.FinishedAt, r.WaitUntil = RunCancelled, now, &now, nil
		return updateRun(ctx, tx, r)
	})
	if err != nil {
		return Run{}, err
	}
	return s.Run(ctx, workspaceID, a.ID, runID)
}
