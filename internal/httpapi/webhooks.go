package httpapi

import (
	"net/http"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/webhooks"
)

type webhookJSON struct {
	Object                   string            `json:"object"` // "webhook", for the Resend SDKs
	ID                       string            `json:"id"`
	MailboxID                *string           `json:"mailbox_id"` // the mailbox it is scoped to, or null
	URL                      string            `json:"url"`
	Events                   []string          `json:"events"`
	Headers                  map[string]string `json:"headers"`
	Active                   bool              `json:"active"`
	DisabledReason           *string           `json:"disabled_reason"`
	DisabledAt               *string           `json:"disabled_at"`
	ConsecutiveFailures      int               `json:"consecutive_failures"`
	LastSuccessAt            *string           `json:"last_success_at"`
	LastFailureAt            *string           `json:"last_failure_at"`
	HeldCount                int               `json:"held_count"`
	PreviousSecretValidUntil *string           `json:"previous_secret_valid_until"`
	CreatedAt                string            `json:"created_at"`
	UpdatedAt                string            `json:"updated_at"`
	Secret                   string            `json:"secret,omitempty"`
	SvixSignatures           bool              `json:"svix_signatures"`          // Svix-style headers too (docs/decisions.md)
	SigningSecret            string            `json:"signing_secret,omitempty"` // secret again, where the Resend SDKs read it
}

// webhookList carries the endpoints twice: webhooks (the spec) and data,
// where the Resend SDKs read a list (docs/decisions.md).
type webhookList struct {
	AutoDisableAfterSilenceSec int64         `json:"auto_disable_after_silence_sec"`
	Data                       []webhookJSON `json:"data"`
	HasMore                    bool          `json:"has_more"`
	MaxAttempts                int           `json:"max_attempts"`
	NextCursor                 *string       `json:"next_cursor"`
	RetryDelaysSec             []int64       `json:"retry_delays_sec"`
	RetryWindowSec             int64         `json:"retry_window_sec"`
	Webhooks                   []webhookJSON `json:"webhooks"`
}

type createWebhookRequest struct {
	URL       string            `json:"url"`
	Endpoint  string            `json:"endpoint"` // Resend's spelling of url
	Events    []string          `json:"events"`
	Headers   map[string]string `json:"headers"`
	MailboxID *string           `json:"mailbox_id"` // scope the endpoint to one mailbox
	// SvixSignatures adds Svix-style signature headers, so a Resend
	// receiver's verify works unchanged.
	SvixSignatures bool `json:"svix_signatures"`
}

// updateWebhookRequest: a nil field is left unchanged.
type updateWebhookRequest struct {
	URL            *string            `json:"url"`
	Endpoint       *string            `json:"endpoint"` // Resend's spelling of url
	Status         *string            `json:"status"`   // Resend's enabled or disabled, for active
	Events         *[]string          `json:"events"`
	Active         *bool              `json:"active"`
	Headers        *map[string]string `json:"headers"`
	RotateSecret   *bool              `json:"rotate_secret"`
	SvixSignatures *bool              `json:"svix_signatures"`
}

func webhookOut(e *webhooks.Endpoint) webhookJSON {
	out := webhookJSON{
		Object: "webhook", ID: e.ID, URL: e.URL, Events: e.Events, Headers: e.Headers, Active: e.Active,
		DisabledAt: tsPtr(e.DisabledAt), ConsecutiveFailures: e.ConsecutiveFailures,
		LastSuccessAt: tsPtr(e.LastSuccessAt), LastFailureAt: tsPtr(e.LastFailureAt), HeldCount: e.HeldCount,
		PreviousSecretValidUntil: tsPtr(e.PreviousSecretValidUntil),
		CreatedAt:                ts(e.CreatedAt), UpdatedAt: ts(e.UpdatedAt), Secret: e.Secret,
		SvixSignatures: true, SigningSecret: e.Secret, // every delivery carries them now; the stored choice is moot
	}
	if e.DisabledReason != "" {
		out.DisabledReason = &e.DisabledReason
	}
	if e.MailboxID != "" {
		m := e.MailboxID
		out.MailboxID = &m
	}
	return out
}

func secondsOf(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = int64(d / time.Second)
	}
	return out
}

func (h *handler) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	es, err := h.d.Services.Webhooks.List(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID)
	if err != nil {
		return err
	}
	out := make([]webhookJSON, 0, len(es))
	for _, e := range es {
		out = append(out, webhookOut(e))
	}
	writeJSON(w, http.StatusOK, webhookList{
		Webhooks:                   out,
		Data:                       out,
		RetryDelaysSec:             secondsOf(webhooks.RetryDelays),
		MaxAttempts:                webhooks.MaxAttempts,
		RetryWindowSec:             int64(webhooks.RetryWindow() / time.Second),
		AutoDisableAfterSilenceSec: int64(webhooks.AutoDisableSilence / time.Second),
	})
	return nil
}

func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req createWebhookRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.URL == "" {
		req.URL = req.Endpoint
	}
	// A key bound to a mailbox registers endpoints scoped to it: one without a
	// mailbox would receive every mailbox's mail.
	p := webhooks.CreateParams{URL: req.URL, Events: req.Events, Headers: req.Headers, SvixSignatures: req.SvixSignatures, MailboxID: apiKey(r).MailboxID}
	if req.MailboxID != nil {
		m, err := h.d.Services.Inbound.Mailbox(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, *req.MailboxID)
		if err != nil {
			return err
		}
		p.MailboxID = m.ID
	}
	e, err := h.d.Services.Webhooks.Create(r.Context(), apiKey(r).WorkspaceID, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, webhookOut(e))
	return nil
}

// webhookID reads the id from the path, or from ?id= on the deprecated
// spellings.
func webhookID(r *http.Request) (string, error) {
	if id := r.PathValue("id"); id != "" {
		return id, nil
	}
	if id := r.URL.Query().Get("id"); id != "" {
		return id, nil
	}
	return "", apierr.InvalidRequest("Name the webhook: /v1/webhooks/{id}.")
}

func (h *handler) getWebhook(w http.ResponseWriter, r *http.Request) error {
	e, err := h.d.Services.Webhooks.Get(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookOut(e))
	return nil
}

func (h *handler) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	var req updateWebhookRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if err := req.resendSpellings(); err != nil {
		return err
	}
	e, err := h.d.Services.Webhooks.Update(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, id, webhooks.UpdateParams{
		URL: req.URL, Events: req.Events, Active: req.Active, Headers: req.Headers,
		RotateSecret: req.RotateSecret != nil && *req.RotateSecret, SvixSignatures: req.SvixSignatures,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookOut(e))
	return nil
}

// resendSpellings folds endpoint into url and status into active; each
// pair given twice must agree.
func (req *updateWebhookRequest) resendSpellings() error {
	if req.Endpoint != nil {
		if req.URL != nil && *req.URL != *req.Endpoint {
			return apierr.InvalidRequest("url and endpoint differ; pass one.")
		}
		req.URL = req.Endpoint
	}
	if req.Status != nil {
		var on bool
		switch *req.Status {
		case "enabled":
			on = true
		case "disabled":
		default:
			return apierr.InvalidRequest("status must be enabled or disabled.")
		}
		if req.Active != nil && *req.Active != on {
			return apierr.InvalidRequest("active and status disagree; pass one.")
		}
		req.Active = &on
	}
	return nil
}

// rotateWebhookSecret is the Resend SDKs' rotation: PATCH with
// rotate_secret, the old secret still signing through its grace window.
func (h *handler) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	e, err := h.d.Services.Webhooks.Update(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, id, webhooks.UpdateParams{RotateSecret: true})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookOut(e))
	return nil
}

func (h *handler) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	if err := h.d.Services.Webhooks.Delete(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

type retryJSON struct {
	NextAttempt       int     `json:"next_attempt"`
	NextAttemptAt     *string `json:"next_attempt_at"`
	AttemptsMade      int     `json:"attempts_made"`
	AttemptsRemaining int     `json:"attempts_remaining"`
}

type webhookDeliveryJSON struct {
	ID           string     `json:"id"`
	WebhookID    string     `json:"webhook_id"`
	EventID      string     `json:"event_id"`
	Event        string     `json:"event"`
	StatusCode   *int       `json:"status_code"`
	ResponseBody string     `json:"response_body"`
	DurationMs   int64      `json:"duration_ms"`
	Error        *string    `json:"error"`
	Attempt      int        `json:"attempt"`
	CreatedAt    string     `json:"created_at"`
	Retry        *retryJSON `json:"retry"`
}

type webhookDeliveryList struct {
	Deliveries []webhookDeliveryJSON `json:"deliveries"`
	listMeta
}

// sendWebhookDeliveryRequest names exactly one of: a webhook to send a test
// event to, or a delivery to replay.
type sendWebhookDeliveryRequest struct {
	WebhookID  string `json:"webhook_id"`
	DeliveryID string `json:"delivery_id"`
}

type manualDeliveryJSON struct {
	DeliveryID   string  `json:"delivery_id"`
	DurationMs   int64   `json:"duration_ms"`
	Error        *string `json:"error"`
	Event        string  `json:"event"`
	EventID      string  `json:"event_id"`
	ResponseBody string  `json:"response_body"`
	// Results and WebhookID answer a replay by event id (replayEvent).
	Results    []manualDeliveryJSON `json:"results,omitempty"`
	StatusCode *int                 `json:"status_code"`
	Success    bool                 `json:"success"`
	WebhookID  string               `json:"webhook_id,omitempty"`
}

func (h *handler) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 25, 100, false)
	if err != nil {
		return err
	}
	q := webhooks.DeliveryQuery{WebhookID: r.URL.Query().Get("webhook_id"), BoundTo: apiKey(r).MailboxID, Limit: pg.Limit + 1}
	if pg.After != nil {
		q.AfterAt, q.AfterID = pg.After.At, pg.After.ID
	}
	ds, err := h.d.Services.Webhooks.ListDeliveries(r.Context(), apiKey(r).WorkspaceID, q)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(ds), func(i int) Cursor {
		return Cursor{At: ds[i].CreatedAt.UnixMilli(), ID: ds[i].ID}
	})
	out := make([]webhookDeliveryJSON, 0, n)
	for _, d := range ds[:n] {
		o := webhookDeliveryJSON{
			ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID, Event: d.Event, StatusCode: d.StatusCode,
			ResponseBody: d.ResponseBody, DurationMs: d.DurationMs, Error: d.Error, Attempt: d.Attempt,
			CreatedAt: ts(d.CreatedAt),
		}
		if d.Retry != nil {
			o.Retry = &retryJSON{NextAttempt: d.Retry.NextAttempt, NextAttemptAt: tsPtr(d.Retry.NextAttemptAt),
				AttemptsMade: d.Retry.AttemptsMade, AttemptsRemaining: d.Retry.AttemptsRemaining}
		}
		out = append(out, o)
	}
	writeJSON(w, http.StatusOK, webhookDeliveryList{Deliveries: out, listMeta: meta})
	return nil
}

func (h *handler) sendWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	var req sendWebhookDeliveryRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	svc, wsID, boundTo := h.d.Services.Webhooks, apiKey(r).WorkspaceID, apiKey(r).MailboxID
	var res *webhooks.ManualResult
	var err error
	switch {
	case req.WebhookID == "" && req.DeliveryID == "":
		return apierr.InvalidRequest("Send either webhook_id (a test event) or delivery_id (a replay).")
	case req.DeliveryID == "":
		res, err = svc.SendTest(r.Context(), wsID, boundTo, req.WebhookID)
	case ids.HasPrefix(req.DeliveryID, "whd"):
		return h.replayEvent(w, r, req.DeliveryID, req.WebhookID)
	case req.WebhookID != "":
		return apierr.InvalidRequest("webhook_id goes with an event id (whd_) only; a delivery's id already names its endpoint.")
	default:
		res, err = svc.Replay(r.Context(), wsID, boundTo, req.DeliveryID)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, manualResultJSON(res))
	return nil
}

func manualResultJSON(res *webhooks.ManualResult) manualDeliveryJSON {
	return manualDeliveryJSON{
		DeliveryID: res.DeliveryID, EventID: res.EventID, Event: res.Event,
		StatusCode: res.StatusCode, ResponseBody: res.ResponseBody, DurationMs: res.DurationMs,
		Error: res.Error, Success: res.Success,
	}
}

// replayEvent answers a replay by event id: the first endpoint's attempt in
// the single-attempt shape, success only when every endpoint accepted, and
// every attempt under results.
func (h *handler) replayEvent(w http.ResponseWriter, r *http.Request, eventID, webhookID string) error {
	rs, err := h.d.Services.Webhooks.ReplayEvent(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, eventID, webhookID)
	if err != nil {
		return err
	}
	out := manualResultJSON(&rs[0].ManualResult)
	out.Results = make([]manualDeliveryJSON, 0, len(rs))
	for i := range rs {
		m := manualResultJSON(&rs[i].ManualResult)
		m.WebhookID = rs[i].WebhookID
		out.Results = append(out.Results, m)
		if !rs[i].Success {
			out.Success = false
		}
	}
	out.WebhookID = rs[0].WebhookID
	writeJSON(w, http.StatusOK, out)
	return nil
}
