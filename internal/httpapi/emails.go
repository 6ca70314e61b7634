package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/inbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

func caller(r *http.Request) sending.Caller { return sending.CallerFor(apiKey(r)) }

func (h *handler) createEmail(w http.ResponseWriter, r *http.Request) error {
	body, err := readSendBody(w, r, maxSendBody, false)
	if err != nil {
		return err
	}
	if err := checkJSONObject(body); err != nil {
		return err
	}
	o, err := sendOptions(r)
	if err != nil {
		return err
	}
	out, err := h.d.Services.Sending.SendWith(r.Context(), caller(r), body, o)
	if err != nil {
		return err
	}
	if out.Preflight != nil {
		writeJSON(w, http.StatusOK, out.Preflight)
		return nil
	}
	writeJSON(w, out.HTTPStatus, out)
	return nil
}

// sendOptions reads the Idempotency-Key header (Resend's spelling of
// idempotency_key) and ?dry_run=true (a preflight: nothing is sent).
func sendOptions(r *http.Request) (sending.SendOptions, error) {
	o := sending.SendOptions{IdempotencyKey: r.Header.Get("Idempotency-Key")}
	switch r.URL.Query().Get("dry_run") {
	case "", "false":
	case "true":
		o.DryRun = true
	default:
		return o, apierr.InvalidRequest("dry_run must be true or false.")
	}
	return o, nil
}

// batchEntry is one element of the batch answer: {id, status} or
// {id: null, status: "failed", error}.
type batchEntry struct {
	ID     *string      `json:"id"`
	Status string       `json:"status"`
	Error  *errorObject `json:"error,omitempty"`
}

type batchRequest struct {
	Emails []json.RawMessage `json:"emails"` // each decoded by the service, so one bad entry fails alone
}

type preflightBatchJSON struct {
	Data []*sending.Preflight `json:"data"`
}

type batchJSON struct {
	Data []batchEntry `json:"data"`
}

func (h *handler) createEmailBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readSendBody(w, r, maxBatchBody, true)
	if err != nil {
		return err
	}
	var req batchRequest
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		// Resend's batch is a bare array of sends.
		if err := json.Unmarshal(t, &req.Emails); err != nil {
			return apierr.New(http.StatusBadRequest, "invalid_json", "The request body is not valid JSON.")
		}
	} else if err := decodeJSON(body, &req); err != nil {
		return err
	}
	o, err := sendOptions(r)
	if err != nil {
		return err
	}
	results, err := h.d.Services.Sending.SendBatchWith(r.Context(), caller(r), req.Emails, o)
	if err != nil {
		return err
	}
	if len(results) > 0 && results[0].Outcome.Preflight != nil {
		// A dry run answers every entry's report (a refusal is a failing verdict in it).
		reports := make([]*sending.Preflight, len(results))
		for i, res := range results {
			reports[i] = res.Outcome.Preflight
		}
		writeJSON(w, http.StatusOK, preflightBatchJSON{Data: reports})
		return nil
	}
	out := make([]batchEntry, len(results))
	for i, res := range results {
		if res.Err == nil {
			id := res.Outcome.ID
			out[i] = batchEntry{ID: &id, Status: string(res.Outcome.Status)}
			continue
		}
		obj := errorObjectOf(publicError(r, res.Err))
		out[i] = batchEntry{Status: string(sending.StatusFailed), Error: &obj}
	}
	writeJSON(w, http.StatusMultiStatus, batchJSON{Data: out})
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
	Object      string            `json:"object"` // "email", as the Resend SDKs read it
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
		Object: "email", ID: e.ID, Status: string(e.Status), From: e.From, To: e.To, Cc: e.Cc, Bcc: e.Bcc, ReplyTo: e.ReplyTo,
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
	meta, n := h.pager.meta(pg, len(list), func(i int) Cursor {
		return Cursor{At: store.Millis(list[i].CreatedAt), ID: list[i].ID}
	})
	data := make([]emailWithEvents, n)
	for i := range data {
		data[i] = emailWithEventsOut(&list[i])
	}
	writeJSON(w, http.StatusOK, emailList{Data: data, listMeta: meta})
	return nil
}

func (h *handler) getEmail(w http.ResponseWriter, r *http.Request) error {
	e, c, err := h.d.Services.Sending.Read(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, emailRead{emailWithEventsOut(e), opt(c.HTML), opt(c.Text)})
	return nil
}

// emailRead is one email as GET /v1/emails/{id} answers it: with its
// bodies, as the Resend SDKs' emails.get reads them (null when none; a
// broadcast recipient's rendered on read).
type emailRead struct {
	emailWithEvents
	HTML *string `json:"html"`
	Text *string `json:"text"`
}

func (h *handler) rescheduleEmail(w http.ResponseWriter, r *http.Request) error {
	var req rescheduleRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.ID != nil && *req.ID != r.PathValue("id") {
		return apierr.InvalidRequest("id in the body (%q) is not the id in the path.", *req.ID)
	}
	if req.SendAt == nil {
		req.SendAt = req.ScheduledAt // Resend's spelling; send_at wins when both are given
	}
	if req.SendAt == nil {
		return apierr.InvalidRequest("send_at is required: the new time, e.g. \"in 10 min\" or an RFC 3339 timestamp.")
	}
	// A receive-side booking's sch_ id names its email too.
	s, err := h.d.Services.Sending.Reschedule(r.Context(), caller(r), inbound.BookedEmail(r.PathValue("id")), *req.SendAt)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rescheduledJSON{ID: r.PathValue("id"), Status: string(s.Status), ScheduledAt: ts(s.ScheduledAt)})
	return nil
}

func (h *handler) cancelEmail(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.d.Services.Sending.Cancel(r.Context(), caller(r), inbound.BookedEmail(id)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, cancelledJSON{ID: id, Status: string(sending.StatusCancelled)})
	return nil
}

// cancelScheduled is the older spelling of cancel. Its 409 carries the
// scheduled outcome beside the error: {error, scheduled_id, status,
// cancelled: false}.
func (h *handler) cancelScheduled(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.booked(r, id); err != nil {
		return err // a bound key cancels its mailbox's bookings only
	}
	status, err := h.d.Services.Sending.Cancel(r.Context(), caller(r), inbound.BookedEmail(id))
	if e, ok := apierr.As(err); ok && e.Code == "too_late_to_cancel" {
		obj := errorObjectOf(e)
		obj.extra = nil // the outcome goes beside the error, not inside
		writeJSON(w, e.Status, scheduledTooLateJSON{Error: obj, ScheduledID: id, Status: string(status), Cancelled: false})
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, scheduledCancelledJSON{ScheduledID: id, Cancelled: true})
	return nil
}

type emailList struct {
	Data []emailWithEvents `json:"data"`
	listMeta
}

// rescheduleRequest: send_at is required; a pointer tells absent from "".
type rescheduleRequest struct {
	SendAt      *string `json:"send_at"`
	ScheduledAt *string `json:"scheduled_at"` // Resend's spelling of send_at
	ID          *string `json:"id"`           // the Resend SDKs repeat the path's id
}

type rescheduledJSON struct {
	ID          string `json:"id"`
	ScheduledAt string `json:"scheduled_at"`
	Status      string `json:"status"`
}

type cancelledJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type scheduledCancelledJSON struct {
	Cancelled   bool   `json:"cancelled"`
	ScheduledID string `json:"scheduled_id"`
}

// scheduledTooLateJSON is the older cancel's 409: the nested error with the
// outcome beside it.
type scheduledTooLateJSON struct {
	Cancelled   bool        `json:"cancelled"`
	Error       errorObject `json:"error"`
	ScheduledID string      `json:"scheduled_id"`
	Status      string      `json:"status"`
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
