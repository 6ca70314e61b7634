package httpapi

import (
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/webhooks"
)

// The Resend SDKs' webhook events: an endpoint's delivery log grouped by
// event (GET /v1/webhooks/deliveries lists the same attempts one by one).

// maxEventAttempts bounds the attempts read to build one answer.
const maxEventAttempts = 1000

type webhookEventJSON struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
	Status    string `json:"status"` // success, attempting or failed
}

type webhookAttemptJSON struct {
	ID             string `json:"id"`
	HTTPStatusCode int    `json:"http_status_code"` // 0 when no answer came
	Response       string `json:"response"`
	SentAt         string `json:"sent_at"`
}

type webhookEventList struct {
	Object  string             `json:"object"`
	HasMore bool               `json:"has_more"`
	Data    []webhookEventJSON `json:"data"`
}

type webhookAttemptList struct {
	Object  string               `json:"object"`
	HasMore bool                 `json:"has_more"`
	Data    []webhookAttemptJSON `json:"data"`
}

// endpointAttempts reads the newest attempts of the path's endpoint.
func (h *handler) endpointAttempts(r *http.Request) ([]webhooks.Delivery, bool, error) {
	ds, err := h.d.Services.Webhooks.ListDeliveries(r.Context(), apiKey(r).WorkspaceID, webhooks.DeliveryQuery{
		WebhookID: r.PathValue("id"), BoundTo: apiKey(r).MailboxID, Limit: maxEventAttempts + 1})
	if err != nil {
		return nil, false, err
	}
	if len(ds) > maxEventAttempts {
		return ds[:maxEventAttempts], true, nil
	}
	return ds, false, nil
}

func (h *handler) listWebhookEvents(w http.ResponseWriter, r *http.Request) error {
	ds, more, err := h.endpointAttempts(r)
	if err != nil {
		return err
	}
	out := webhookEventList{Object: "list", HasMore: more, Data: []webhookEventJSON{}}
	at := map[string]int{}
	for _, d := range ds { // newest first: the first row of an event is its latest attempt
		i, seen := at[d.EventID]
		if !seen {
			at[d.EventID] = len(out.Data)
			out.Data = append(out.Data, webhookEventJSON{ID: d.EventID, Type: d.Event, CreatedAt: ts(d.CreatedAt), Status: eventStatus(d)})
			continue
		}
		out.Data[i].CreatedAt = ts(d.CreatedAt) // the first attempt's time
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// eventStatus is an event's status from its latest attempt: success when it
// got a 2xx, attempting while retries are owed, else failed.
func eventStatus(latest webhooks.Delivery) string {
	switch {
	case latest.StatusCode != nil && *latest.StatusCode >= 200 && *latest.StatusCode < 300:
		return "success"
	case latest.Retry != nil:
		return "attempting"
	}
	return "failed"
}

type webhookEventDetailJSON struct {
	Object string `json:"object"`
	webhookEventJSON
	NextAttemptAt *string         `json:"next_attempt_at"`
	Payload       json.RawMessage `json:"payload"` // the body as delivered
}

// getWebhookEvent is one event delivered to the endpoint, with its status
// (from its attempts to this endpoint) and its body.
func (h *handler) getWebhookEvent(w http.ResponseWriter, r *http.Request) error {
	ds, _, err := h.endpointAttempts(r)
	if err != nil {
		return err
	}
	var out *webhookEventDetailJSON
	for _, d := range ds { // newest first
		if d.EventID != r.PathValue("event") {
			continue
		}
		if out == nil {
			out = &webhookEventDetailJSON{Object: "webhook_event", webhookEventJSON: webhookEventJSON{ID: d.EventID, Type: d.Event, Status: eventStatus(d)}}
			if d.Retry != nil {
				out.NextAttemptAt = tsPtr(d.Retry.NextAttemptAt)
			}
		}
		out.CreatedAt = ts(d.CreatedAt) // the first attempt's time
	}
	if out == nil {
		return apierr.NotFound("event delivered to this webhook")
	}
	_, body, err := h.d.Services.Webhooks.EventBody(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, out.ID)
	if err != nil {
		return err
	}
	if json.Valid(body) {
		out.Payload = body
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) listWebhookEventAttempts(w http.ResponseWriter, r *http.Request) error {
	ds, more, err := h.endpointAttempts(r)
	if err != nil {
		return err
	}
	out := webhookAttemptList{Object: "list", HasMore: more, Data: []webhookAttemptJSON{}}
	for _, d := range ds {
		if d.EventID != r.PathValue("event") {
			continue
		}
		a := webhookAttemptJSON{ID: d.ID, Response: d.ResponseBody, SentAt: ts(d.CreatedAt)}
		if d.StatusCode != nil {
			a.HTTPStatusCode = *d.StatusCode
		}
		out.Data = append(out.Data, a)
	}
	if len(out.Data) == 0 && !more {
		return apierr.NotFound("event delivered to this webhook")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type webhookEventReplayed struct {
	Object string `json:"object"`
	ID     string `json:"id"`
}

// replayWebhookEvent sends the event again to this endpoint (as POST
// /v1/webhooks/deliveries with an event id and webhook_id).
func (h *handler) replayWebhookEvent(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.d.Services.Webhooks.ReplayEvent(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, r.PathValue("event"), r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookEventReplayed{Object: "webhook_event", ID: r.PathValue("event")})
	return nil
}
