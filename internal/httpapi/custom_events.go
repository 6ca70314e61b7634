package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
)

// Custom events (the Resend SDKs' events.*): named events that start the
// automations whose trigger is event: <name> (docs/automations.md).

type createEventRequest struct {
	Name   *string         `json:"name"`
	Schema json.RawMessage `json:"schema"` // {field: string|number|boolean|date} or null
}

type updateEventRequest struct {
	Schema json.RawMessage `json:"schema"` // required; null removes it
}

type sendEventRequest struct {
	Event     *string         `json:"event"`
	ContactID *string         `json:"contact_id"`
	Email     *string         `json:"email"`
	Payload   json.RawMessage `json:"payload"` // an object, readable as {{ trigger.<name> }}
}

type eventJSON struct {
	Object    string            `json:"object"`
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Schema    map[string]string `json:"schema"`
	CreatedAt string            `json:"created_at"`
	UpdatedAt *string           `json:"updated_at"`
}

type eventList struct {
	Object string      `json:"object"`
	Data   []eventJSON `json:"data"`
	listMeta
}

type eventDeletedJSON struct {
	Object  string `json:"object"`
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

type eventSentJSON struct {
	Object string   `json:"object"`
	Event  string   `json:"event"`
	RunIDs []string `json:"run_ids"` // the runs started, one per automation listening
}

func eventOut(e automations.Event) eventJSON {
	out := eventJSON{Object: "event", ID: e.ID, Name: e.Name, Schema: e.Schema, CreatedAt: ts(e.CreatedAt)}
	if e.UpdatedAt != nil {
		s := ts(*e.UpdatedAt)
		out.UpdatedAt = &s
	}
	return out
}

// eventSchema reads a schema field: absent or null is none.
func eventSchema(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, apierr.InvalidRequest("schema must be an object of field names to string, number, boolean or date (or null).")
	}
	return m, nil
}

func (h *handler) createEvent(w http.ResponseWriter, r *http.Request) error {
	var req createEventRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return apierr.InvalidRequest("name is required, e.g. user.created.")
	}
	schema, err := eventSchema(req.Schema)
	if err != nil {
		return err
	}
	e, err := h.d.Services.Automations.CreateEvent(r.Context(), apiKey(r).WorkspaceID, *req.Name, schema)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, eventOut(e))
	return nil
}

func (h *handler) listEvents(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	var es []automations.Event
	if c := pg.After; c != nil {
		at := time.UnixMilli(c.At).UTC()
		es, err = h.d.Services.Automations.Events(r.Context(), apiKey(r).WorkspaceID, &at, c.ID, pg.Limit+1)
	} else {
		es, err = h.d.Services.Automations.Events(r.Context(), apiKey(r).WorkspaceID, nil, "", pg.Limit+1)
	}
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(es), func(i int) Cursor { return Cursor{At: es[i].CreatedAt.UnixMilli(), ID: es[i].ID} })
	out := eventList{Object: "list", Data: make([]eventJSON, 0, n), listMeta: meta}
	for _, e := range es[:n] {
		out.Data = append(out.Data, eventOut(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getEvent(w http.ResponseWriter, r *http.Request) error {
	e, err := h.d.Services.Automations.Event(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventOut(e))
	return nil
}

func (h *handler) updateEvent(w http.ResponseWriter, r *http.Request) error {
	var req updateEventRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if len(req.Schema) == 0 {
		return apierr.InvalidRequest("schema is required (null removes it).")
	}
	schema, err := eventSchema(req.Schema)
	if err != nil {
		return err
	}
	e, err := h.d.Services.Automations.SetEventSchema(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), schema)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventOut(e))
	return nil
}

func (h *handler) deleteEvent(w http.ResponseWriter, r *http.Request) error {
	id, err := h.d.Services.Automations.DeleteEvent(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventDeletedJSON{Object: "event", ID: id, Deleted: true})
	return nil
}

// sendEvent starts the automations listening on the event for a contact;
// 202 with the runs started (none is not an error: nothing listens yet).
func (h *handler) sendEvent(w http.ResponseWriter, r *http.Request) error {
	var req sendEventRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Event == nil || strings.TrimSpace(*req.Event) == "" {
		return apierr.InvalidRequest("event is required: the name of a custom event (POST /v1/events).")
	}
	in := automations.SendEventInput{Event: *req.Event}
	var err error
	if in.ContactID, in.Email, err = contactNamed(req.ContactID, req.Email, "the event is about"); err != nil {
		return err
	}
	if len(req.Payload) > 0 && string(req.Payload) != "null" {
		if err := json.Unmarshal(req.Payload, &in.Payload); err != nil || in.Payload == nil {
			return apierr.InvalidRequest("payload must be an object; its fields are readable as {{ trigger.<name> }}.")
		}
	}
	runs, err := h.d.Services.Automations.SendEvent(r.Context(), apiKey(r).WorkspaceID, in)
	if err != nil {
		return err
	}
	out := eventSentJSON{Object: "event", Event: in.Event, RunIDs: make([]string, 0, len(runs))}
	for _, run := range runs {
		out.RunIDs = append(out.RunIDs, run.ID)
	}
	writeJSON(w, http.StatusAccepted, out)
	return nil
}
