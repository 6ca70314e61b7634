package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// emailsRoutes registers the /v1/emails routes and the older spelling of
// cancel. All of them need mail:send; a key with only that scope sees only
// the emails it sent.
func (h *handler) emailsRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/emails", scoped(send, h.createEmail))
	mux.HandleFunc("POST /v1/emails/batch", scoped(send, h.createEmailBatch))
	mux.HandleFunc("GET /v1/emails", scoped(send, h.listEmails))
	mux.HandleFunc("GET /v1/emails/{id}", scoped(send, h.getEmail))
	mux.HandleFunc("PATCH /v1/emails/{id}", scoped(send, h.rescheduleEmail))
	mux.HandleFunc("POST /v1/emails/{id}/cancel", scoped(send, h.cancelEmail))
	mux.HandleFunc("DELETE /v1/messages/scheduled/{id}", scoped(send, h.cancelScheduled))
}

func caller(r *http.Request) sending.Caller {
	k := apiKey(r)
	c := sending.Caller{WorkspaceID: k.WorkspaceID, KeyID: k.ID, OwnOnly: !k.HasScope(ws), OwnerEmail: k.OwnerEmail, OwnerConfirmed: k.OwnerConfirmed}
	if k.Unconfirmed {
		c.ConfirmKey = k.Confirm
	}
	return c
}

func (h *handler) createEmail(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, maxSendBody)
	if err != nil {
		return err
	}
	if err := checkJSONObject(body); err != nil {
		return err
	}
	out, err := h.d.Services.Sending.Send(r.Context(), caller(r), body)
	if err != nil {
		return err
	}
	writeJSON(w, out.HTTPStatus, out)
	return nil
}

// batchEntry is one element of the batch answer: {id, status} or
// {id: null, status: "failed", error}.
type batchEntry struct {
	ID     *string        `json:"id"`
	Status string         `json:"status"`
	Error  map[string]any `json:"error,omitempty"`
}

func (h *handler) createEmailBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, maxBatchBody)
	if err != nil {
		return err
	}
	var req struct {
		Emails []json.RawMessage `json:"emails"`
	}
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	results, err := h.d.Services.Sending.SendBatch(r.Context(), caller(r), req.Emails)
	if err != nil {
		return err
	}
	out := make([]batchEntry, len(results))
	for i, res := range results {
		if res.Err == nil {
			id := res.Outcome.ID
			out[i] = batchEntry{ID: &id, Status: string(res.Outcome.Status)}
			continue
		}
		e, ok := apierr.As(res.Err)
		if !ok {
			slog.ErrorContext(r.Context(), "batch entry failed", "err", res.Err, "index", i, "request_id", requestID(r))
			e = apierr.Internal()
		}
		inner := map[string]any{"code": e.Code, "message": e.Message, "next": nil}
		if e.Next != "" {
			inner["next"] = e.Next
		}
		for k, v := range e.Extra {
			inner[k] = v
		}
		out[i] = batchEntry{Status: string(sending.StatusFailed), Error: inner}
	}
	writeJSON(w, http.StatusMultiStatus, map[string]any{"data": out})
	return nil
}

type emailEventJSON struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	At       string         `json:"at"`
	Sequence int            `json:"sequence"`
	Data     map[string]any `json:"data"`
}

type emailJSON struct {
	ID          string            `json:"id"`
	Status      string            `json:"status"`
	From        string            `json:"from"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc"`
	Bcc         []string          `json:"bcc"`
	ReplyTo     []string          `json:"reply_to"`
	Subject     string            `json:"subject"`
	CreatedAt   string            `json:"created_at"`
	ScheduledAt *string           `json:"scheduled_at"`
	Tags        map[string]string `json:"tags"`
	Opens       int               `json:"opens"`
	Clicks      int               `json:"clicks"`
	LastEvent   *string           `json:"last_event"`
	LastError   *string           `json:"last_error"`
	TestMode    bool              `json:"test_mode"`
	MessageID   string            `json:"message_id"`
}

func emailOut(e *sending.Email) emailJSON {
	out := emailJSON{
		ID: e.ID, Status: string(e.Status), From: e.From, To: e.To, Cc: e.Cc, Bcc: e.Bcc, ReplyTo: e.ReplyTo,
		Subject: e.Subject, CreatedAt: ts(e.CreatedAt), ScheduledAt: tsPtr(e.ScheduledAt), Tags: e.Tags,
		Opens: e.Opens, Clicks: e.Clicks, TestMode: e.TestMode, MessageID: e.MessageID,
	}
	if e.LastEvent != "" {
		out.LastEvent = &e.LastEvent
	}
	if e.LastError != "" {
		out.LastError = &e.LastError
	}
	return out
}

func (h *handler) listEmails(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 25, 100, false)
	if err != nil {
		return err
	}
	var pos *sending.Position
	if pg.After != nil {
		pos = &sending.Position{At: pg.After.At, ID: pg.After.ID}
	}
	list, err := h.d.Services.Sending.List(r.Context(), caller(r), pg.Limit+1, pos)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(len(list), pg.Limit, func(i int) Cursor {
		return Cursor{At: store.Millis(list[i].CreatedAt), ID: list[i].ID}
	})
	data := make([]emailWithEvents, n)
	for i := range data {
		data[i] = emailWithEventsOut(&list[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": meta.HasMore, "next_cursor": meta.NextCursor})
	return nil
}

func (h *handler) getEmail(w http.ResponseWriter, r *http.Request) error {
	e, err := h.d.Services.Sending.Get(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, emailWithEventsOut(e))
	return nil
}

func (h *handler) rescheduleEmail(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		SendAt *string `json:"send_at"`
	}
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.SendAt == nil {
		return apierr.InvalidRequest("send_at is required: the new time, e.g. \"in 10 min\" or an RFC 3339 timestamp.")
	}
	s, err := h.d.Services.Sending.Reschedule(r.Context(), caller(r), r.PathValue("id"), *req.SendAt)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": s.ID, "status": s.Status, "scheduled_at": ts(s.ScheduledAt)})
	return nil
}

func (h *handler) cancelEmail(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.d.Services.Sending.Cancel(r.Context(), caller(r), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": sending.StatusCancelled})
	return nil
}

// cancelScheduled is the older spelling of cancel. Its 409 carries the
// scheduled outcome beside the error: {error, scheduled_id, status,
// cancelled: false}.
func (h *handler) cancelScheduled(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	status, err := h.d.Services.Sending.Cancel(r.Context(), caller(r), id)
	if e, ok := apierr.As(err); ok && e.Code == "too_late_to_cancel" {
		next := any(nil)
		if e.Next != "" {
			next = e.Next
		}
		writeJSON(w, e.Status, map[string]any{
			"error":        map[string]any{"code": e.Code, "message": e.Message, "next": next},
			"scheduled_id": id, "status": status, "cancelled": false,
		})
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"scheduled_id": id, "cancelled": true})
	return nil
}

// emailWithEvents is an Email with its timeline, as both reads answer it.
type emailWithEvents struct {
	emailJSON
	Events []emailEventJSON `json:"events"`
}

func emailWithEventsOut(e *sending.Email) emailWithEvents {
	evs := make([]emailEventJSON, len(e.Events))
	for i, ev := range e.Events {
		evs[i] = emailEventJSON{ID: ev.ID, Type: ev.Type, At: ev.CreatedAt.UTC().Format(events.TimeFormat), Sequence: ev.Sequence, Data: ev.Data}
		if evs[i].Data == nil {
			evs[i].Data = map[string]any{}
		}
	}
	return emailWithEvents{emailOut(e), evs}
}
