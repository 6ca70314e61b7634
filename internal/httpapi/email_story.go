package httpapi

import (
	"net/http"

	"mailroom/internal/outbound"
	"mailroom/internal/webhooks"
)

// emailAttemptsJSON is GET /v1/emails/{id}/attempts: every delivery attempt
// of the email with its session and SMTP replies, and every webhook
// delivery of its events (#48 item 1).
type emailAttemptsJSON struct {
	Object            string                   `json:"object"`
	EmailID           string                   `json:"email_id"`
	Status            string                   `json:"status"`
	Data              []attemptJSON            `json:"data"`
	WebhookDeliveries []storyWebhookDeliveryJS `json:"webhook_deliveries"`
}

type attemptJSON struct {
	Object     string          `json:"object"`
	Recipient  string          `json:"recipient"`
	Attempt    int             `json:"attempt"`
	StartedAt  string          `json:"started_at"`
	DurationMs int64           `json:"duration_ms"`
	Outcome    string          `json:"outcome"`
	Stage      string          `json:"stage"`
	Code       int             `json:"code"`
	Enhanced   string          `json:"enhanced_code"`
	Reply      string          `json:"reply"`
	MX         string          `json:"mx"`
	RemoteIP   string          `json:"remote_ip"`
	SourceIP   string          `json:"source_ip"`
	TLS        *attemptTLSJSON `json:"tls"` // null in the clear
	MTASTS     *string         `json:"mta_sts"`
	Session    string          `json:"session"` // new or reused
	Replies    []outbound.Step `json:"replies"`
}

type attemptTLSJSON struct {
	Version  string `json:"version"`
	Cipher   string `json:"cipher"`
	Verified bool   `json:"verified"`
}

type storyWebhookDeliveryJS struct {
	ID         string  `json:"id"`
	WebhookID  string  `json:"webhook_id"`
	EventID    string  `json:"event_id"`
	Event      string  `json:"event"`
	Attempt    int     `json:"attempt"`
	StatusCode *int    `json:"status_code"`
	DurationMs int64   `json:"duration_ms"`
	Error      *string `json:"error"`
	CreatedAt  string  `json:"created_at"`
}

// storyWebhookLimit bounds the webhook part: an email raises a handful of
// events, each delivered to a few endpoints a few times.
const storyWebhookLimit = 500

func (h *handler) getEmailAttempts(w http.ResponseWriter, r *http.Request) error {
	c := caller(r)
	e, err := h.d.Services.Sending.Get(r.Context(), c, r.PathValue("id")) // 404 outside the key's grant
	if err != nil {
		return err
	}
	as, err := h.d.Services.Delivery.Attempts(r.Context(), c.WorkspaceID, e.ID)
	if err != nil {
		return err
	}
	out := emailAttemptsJSON{Object: "list", EmailID: e.ID, Status: string(e.Status), Data: []attemptJSON{}, WebhookDeliveries: []storyWebhookDeliveryJS{}}
	for _, a := range as {
		j := attemptJSON{Object: "delivery_attempt", Recipient: a.Recipient, Attempt: a.Attempt, StartedAt: ts(a.At), DurationMs: a.DurationMs,
			Outcome: a.Outcome, Stage: a.Stage, Code: a.Code, Enhanced: a.Enhanced, Reply: a.Reply, MX: a.MX, RemoteIP: a.RemoteIP,
			SourceIP: a.SourceIP, Session: "new", Replies: a.Steps}
		if a.Reused {
			j.Session = "reused"
		}
		if a.TLS != "" {
			j.TLS = &attemptTLSJSON{Version: a.TLS, Cipher: a.Cipher, Verified: a.Verified}
		}
		if a.MTASTS != "" {
			j.MTASTS = &a.MTASTS
		}
		if j.Replies == nil {
			j.Replies = []outbound.Step{}
		}
		out.Data = append(out.Data, j)
	}
	var eventIDs []string
	for _, ev := range e.Events {
		if ev.ID != "" {
			eventIDs = append(eventIDs, ev.ID)
		}
	}
	if len(eventIDs) > 0 {
		ds, err := h.d.Services.Webhooks.ListDeliveries(r.Context(), c.WorkspaceID, webhooks.DeliveryQuery{
			EventIDs: eventIDs, BoundTo: apiKey(r).MailboxID, Limit: storyWebhookLimit})
		if err != nil {
			return err
		}
		for i := len(ds) - 1; i >= 0; i-- { // oldest first, as the attempts
			d := ds[i]
			out.WebhookDeliveries = append(out.WebhookDeliveries, storyWebhookDeliveryJS{ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID,
				Event: d.Event, Attempt: d.Attempt, StatusCode: d.StatusCode, DurationMs: d.DurationMs, Error: d.Error, CreatedAt: ts(d.CreatedAt)})
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
