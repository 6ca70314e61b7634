package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
	"mailroom/internal/store"
)

type triggerRequest struct {
	Email          *string         `json:"email"`
	ContactID      *string         `json:"contact_id"`
	IdempotencyKey *string         `json:"idempotency_key"` // required
	Data           json.RawMessage `json:"data"`            // an object, readable as {{ trigger.<name> }}
}

type triggerJSON struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

type runStepJSON struct {
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	Status     string  `json:"status"`
	Outcome    string  `json:"outcome,omitempty"`
	EmailID    *string `json:"email_id,omitempty"`
	StartedAt  string  `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
	Error      *string `json:"error,omitempty"`
}

type runJSON struct {
	// ID and Object are run_id and the kind where the Resend SDKs read them.
	ID           string         `json:"id"`
	Object       string         `json:"object"`
	RunID        string         `json:"run_id"`
	AutomationID string         `json:"automation_id"`
	Version      int            `json:"version"`
	Status       string         `json:"status"`
	ContactID    string         `json:"contact_id"`
	Email        string         `json:"email"`
	Steps        []runStepJSON  `json:"steps"`
	EmailsSent   int            `json:"emails_sent"`
	Error        *string        `json:"error"`
	WaitUntil    *string        `json:"wait_until"`
	Trigger      map[string]any `json:"trigger"`
	CreatedAt    string         `json:"created_at"`
	FinishedAt   *string        `json:"finished_at"`
}

type runListJSON struct {
	Runs []runJSON `json:"runs"`
	listMeta
}

// maxIdempotencyKey bounds a trigger's key (as the send API's keys).
const maxIdempotencyKey = 256

func runOut(r automations.Run) runJSON {
	out := runJSON{ID: r.ID, Object: "automation_run", RunID: r.ID, AutomationID: r.AutomationID, Version: r.Version, Status: r.Status, ContactID: r.ContactID, Email: r.Email,
		Steps: make([]runStepJSON, 0, len(r.Steps)), EmailsSent: r.EmailsSent, Error: r.Error, Trigger: r.TriggerData, CreatedAt: ts(r.CreatedAt)}
	if r.WaitUntil != nil {
		s := ts(*r.WaitUntil)
		out.WaitUntil = &s
	}
	if r.FinishedAt != nil {
		s := ts(*r.FinishedAt)
		out.FinishedAt = &s
	}
	for _, st := range r.Steps {
		j := runStepJSON{ID: st.ID, Type: st.Type, Status: st.Status, Outcome: st.Outcome, EmailID: st.EmailID, StartedAt: ts(st.StartedAt), Error: st.Error}
		if st.FinishedAt != nil {
			s := ts(*st.FinishedAt)
			j.FinishedAt = &s
		}
		out.Steps = append(out.Steps, j)
	}
	return out
}

func (h *handler) triggerAutomation(w http.ResponseWriter, r *http.Request) error {
	var req triggerRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	in := automations.TriggerInput{}
	var err error
	if in.ContactID, in.Email, err = contactNamed(req.ContactID, req.Email, "the run is for"); err != nil {
		return err
	}
	if req.IdempotencyKey == nil || strings.TrimSpace(*req.IdempotencyKey) == "" {
		return apierr.InvalidRequest("idempotency_key is required: a key of yours that names this trigger, so a retry starts no second run.")
	}
	if len(*req.IdempotencyKey) > maxIdempotencyKey {
		return apierr.InvalidRequest("idempotency_key is longer than %d characters.", maxIdempotencyKey)
	}
	in.IdempotencyKey = *req.IdempotencyKey
	if len(req.Data) > 0 && string(req.Data) != "null" {
		if err := json.Unmarshal(req.Data, &in.Data); err != nil || in.Data == nil {
			return apierr.InvalidRequest("data must be an object; its fields are readable as {{ trigger.<name> }}.")
		}
	}
	run, err := h.d.Services.Automations.Trigger(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, triggerJSON{RunID: run.ID, Status: run.Status})
	return nil
}

func (h *handler) listAutomationRuns(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, automations.DefaultRuns, automations.MaxRuns, false)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(automations.RunStatuses, status) {
		return apierr.InvalidRequest("status must be one of %s.", strings.Join(automations.RunStatuses, ", "))
	}
	var before *automations.Position
	if pg.After != nil {
		before = &automations.Position{At: pg.After.At, ID: pg.After.ID}
	}
	rs, err := h.d.Services.Automations.Runs(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), status, before, pg.Limit+1)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(rs), func(i int) Cursor { return Cursor{At: store.Millis(rs[i].CreatedAt), ID: rs[i].ID} })
	out := runListJSON{Runs: make([]runJSON, 0, n), listMeta: meta}
	for _, run := range rs[:n] {
		out.Runs = append(out.Runs, runOut(run))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getAutomationRun(w http.ResponseWriter, r *http.Request) error {
	run, err := h.d.Services.Automations.Run(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.PathValue("runId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runOut(run))
	return nil
}

func (h *handler) cancelAutomationRun(w http.ResponseWriter, r *http.Request) error {
	run, err := h.d.Services.Automations.CancelRun(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.PathValue("runId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runOut(run))
	return nil
}

// contactNamed reads the one of contact_id and email a body names the
// contact by; what says which contact, for the message.
func contactNamed(contactID, email *string, what string) (id, addr string, err error) {
	switch {
	case email != nil && contactID != nil:
		return "", "", apierr.InvalidRequest("Send email or contact_id, not both.")
	case contactID != nil && *contactID != "":
		return *contactID, "", nil
	case email != nil && strings.TrimSpace(*email) != "":
		return "", *email, nil
	}
	return "", "", apierr.InvalidRequest("email or contact_id is required: the contact %s.", what)
}
