package httpapi

import (
	"net/http"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/webhooks"
)

// webhooksRoutes registers the /v1/webhooks routes.
func (h *handler) webhooksRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/webhooks", scoped(ws, h.listWebhooks))
	mux.HandleFunc("POST /v1/webhooks", scoped(ws, h.createWebhook))
	mux.HandleFunc("PATCH /v1/webhooks", scoped(ws, h.updateWebhook))  // deprecated ?id=
	mux.HandleFunc("DELETE /v1/webhooks", scoped(ws, h.deleteWebhook)) // deprecated ?id=
	mux.HandleFunc("GET /v1/webhooks/deliveries", scoped(ws, h.listWebhookDeliveries))
	mux.HandleFunc("POST /v1/webhooks/deliveries", scoped(ws, h.sendWebhookDelivery))
	mux.HandleFunc("GET /v1/webhooks/{id}", scoped(ws, h.getWebhook))
	mux.HandleFunc("PATCH /v1/webhooks/{id}", scoped(ws, h.updateWebhook))
	mux.HandleFunc("DELETE /v1/webhooks/{id}", scoped(ws, h.deleteWebhook))
}

type webhookJSON struct {
	ID                       string            `json:"id"`
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
}

func webhookOut(e *webhooks.Endpoint) webhookJSON {
	out := webhookJSON{
		ID: e.ID, URL: e.URL, Events: e.Events, Headers: e.Headers, Active: e.Active,
		DisabledAt: tsPtr(e.DisabledAt), ConsecutiveFailures: e.ConsecutiveFailures,
		LastSuccessAt: tsPtr(e.LastSuccessAt), LastFailureAt: tsPtr(e.LastFailureAt), HeldCount: e.HeldCount,
		PreviousSecretValidUntil: tsPtr(e.PreviousSecretValidUntil),
		CreatedAt:                ts(e.CreatedAt), UpdatedAt: ts(e.UpdatedAt), Secret: e.Secret,
	}
	if e.DisabledReason != "" {
		out.DisabledReason = &e.DisabledReason
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
	es, err := h.d.Services.Webhooks.List(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := make([]webhookJSON, 0, len(es))
	for _, e := range es {
		out = append(out, webhookOut(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"webhooks":                       out,
		"retry_delays_sec":               secondsOf(webhooks.RetryDelays),
		"max_attempts":                   webhooks.MaxAttempts,
		"retry_window_sec":               int64(webhooks.RetryWindow() / time.Second),
		"auto_disable_after_silence_sec": int64(webhooks.AutoDisableSilence / time.Second),
		"has_more":                       false,
		"next_cursor":                    nil,
	})
	return nil
}

func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		URL     string            `json:"url"`
		Events  []string          `json:"events"`
		Headers map[string]string `json:"headers"`
	}
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	e, err := h.d.Services.Webhooks.Create(r.Context(), apiKey(r).WorkspaceID, webhooks.CreateParams(req))
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
	e, err := h.d.Services.Webhooks.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
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
	var req struct {
		URL          *string            `json:"url"`
		Events       *[]string          `json:"events"`
		Active       *bool              `json:"active"`
		Headers      *map[string]string `json:"headers"`
		RotateSecret *bool              `json:"rotate_secret"`
	}
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	e, err := h.d.Services.Webhooks.Update(r.Context(), apiKey(r).WorkspaceID, id, webhooks.UpdateParams{
		URL: req.URL, Events: req.Events, Active: req.Active, Headers: req.Headers,
		RotateSecret: req.RotateSecret != nil && *req.RotateSecret,
	})
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
	if err := h.d.Services.Webhooks.Delete(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": id})
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

func (h *handler) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 25, 100, false)
	if err != nil {
		return err
	}
	q := webhooks.DeliveryQuery{WebhookID: r.URL.Query().Get("webhook_id"), Limit: pg.Limit + 1}
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
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": out, "has_more": meta.HasMore, "next_cursor": meta.NextCursor})
	return nil
}

func (h *handler) sendWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		WebhookID  string `json:"webhook_id"`
		DeliveryID string `json:"delivery_id"`
	}
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	svc, wsID := h.d.Services.Webhooks, apiKey(r).WorkspaceID
	var res *webhooks.ManualResult
	var err error
	switch {
	case req.WebhookID == "" && req.DeliveryID == "":
		return apierr.InvalidRequest("Send either webhook_id (a test event) or delivery_id (a replay).")
	case req.DeliveryID == "":
		res, err = svc.SendTest(r.Context(), wsID, req.WebhookID)
	case ids.HasPrefix(req.DeliveryID, "whd"):
		return h.replayEvent(w, r, req.DeliveryID, req.WebhookID)
	case req.WebhookID != "":
		return apierr.InvalidRequest("webhook_id goes with an event id (whd_) only; a delivery's id already names its endpoint.")
	default:
		res, err = svc.Replay(r.Context(), wsID, req.DeliveryID)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, manualResultJSON(res))
	return nil
}

func manualResultJSON(res *webhooks.ManualResult) map[string]any {
	return map[string]any{
		"delivery_id": res.DeliveryID, "event_id": res.EventID, "event": res.Event,
		"status_code": res.StatusCode, "response_body": res.ResponseBody, "duration_ms": res.DurationMs,
		"error": res.Error, "success": res.Success,
	}
}

// replayEvent answers a replay by event id: the first endpoint's attempt in
// the single-attempt shape, success only when every endpoint accepted, and
// every attempt under results.
func (h *handler) replayEvent(w http.ResponseWriter, r *http.Request, eventID, webhookID string) error {
	rs, err := h.d.Services.Webhooks.ReplayEvent(r.Context(), apiKey(r).WorkspaceID, eventID, webhookID)
	if err != nil {
		return err
	}
	out := manualResultJSON(&rs[0].ManualResult)
	results := make([]map[string]any, 0, len(rs))
	for i := range rs {
		m := manualResultJSON(&rs[i].ManualResult)
		m["webhook_id"] = rs[i].WebhookID
		results = append(results, m)
		if !rs[i].Success {
			out["success"] = false
		}
	}
	out["webhook_id"] = rs[0].WebhookID
	out["results"] = results
	writeJSON(w, http.StatusOK, out)
	return nil
}
