package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/webhooks"
)

// The event stream: the workspace's webhook events as server-sent events,
// read from the event log (webhooks.Stream), and the bulk replay that
// queues past ones for an endpoint again.

// streamHeartbeat is how often an idle stream writes a comment line, so
// that proxies and clients see it alive.
const streamHeartbeat = 15 * time.Second

// streamEvents serves GET /v1/events/stream: each event as
// "id: <cursor>\nevent: <type>\ndata: <webhook body>\n\n". Last-Event-ID
// (or ?since=1h / an RFC 3339 time) resumes; without either the stream
// starts with the events raised from now on. ?types= narrows it.
func (h *handler) streamEvents(w http.ResponseWriter, r *http.Request) error {
	svc, k := h.d.Services.Webhooks, apiKey(r)
	scope := webhooks.StreamScope{WorkspaceID: k.WorkspaceID, Mailbox: k.MailboxID, DomainID: k.DomainID, DomainName: k.DomainName}
	types, err := eventTypes(splitList(r.URL.Query().Get("types")))
	if err != nil {
		return err
	}
	scope.Types = types
	cursor, err := streamStart(r.Context(), svc, r.Header.Get("Last-Event-ID"), r.URL.Query().Get("since"), h.d.Clock.Now())
	if err != nil {
		return err
	}
	st, err := svc.OpenStream(scope, cursor)
	if err != nil {
		if e, ok := apierr.As(err); ok && e.Code == "rate_limited" {
			w.Header().Set("Retry-After", "5")
			writeErrorShape(w, e, flat) // the spec answers rate_limited flat on every route
			return nil
		}
		return err
	}
	defer st.Close()

	rc := http.NewResponseController(w)
	writeTimeout := h.d.StreamWriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = 10 * time.Second
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	buf.WriteString(": mailroom event stream\nretry: 2000\n\n")
	for {
		// Each write must reach the client within writeTimeout; one that
		// does not ends the handler, and so the connection: a slow client
		// costs the node one page, never a growing queue.
		if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
			return nil
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		buf.Reset()
		evs, err := st.Next(r.Context(), streamHeartbeat)
		if err != nil {
			if r.Context().Err() == nil && !errors.Is(err, webhooks.ErrStreamsClosed) {
				h.log.Error("event stream", "err", err, "request_id", requestID(r))
			}
			return nil // the answer has begun: closing is all that is left
		}
		if len(evs) == 0 {
			buf.WriteString(": heartbeat\n\n")
			continue
		}
		for _, ev := range evs {
			writeSSE(&buf, ev)
		}
	}
}

// writeSSE appends one event. A webhook body is compact JSON, one line;
// were a line break in it, each line would go as its own data: field,
// which a client joins back with "\n".
func writeSSE(buf *bytes.Buffer, ev webhooks.StreamEvent) {
	buf.WriteString("id: ")
	buf.WriteString(strconv.FormatInt(ev.Cursor, 10))
	buf.WriteString("\nevent: ")
	buf.WriteString(ev.Type)
	for line := range strings.SplitSeq(string(ev.Body), "\n") {
		buf.WriteString("\ndata: ")
		buf.WriteString(strings.TrimSuffix(line, "\r"))
	}
	buf.WriteString("\n\n")
}

// streamStart is the cursor a stream starts after: Last-Event-ID, else
// since (a duration back from now, or an RFC 3339 time), else the log's end.
func streamStart(ctx context.Context, svc *webhooks.Service, lastID, since string, now time.Time) (int64, error) {
	if lastID != "" {
		c, err := strconv.ParseInt(strings.TrimSpace(lastID), 10, 64)
		if err != nil || c < 0 {
			return 0, apierr.InvalidRequest("Last-Event-ID %q is not an id this stream sent (a non-negative integer).", clipParam(lastID))
		}
		return c, nil
	}
	if since == "" {
		return svc.LogEnd(ctx)
	}
	t, err := parseSince(since, now)
	if err != nil {
		return 0, err
	}
	return svc.StreamCursor(ctx, t)
}

// parseSince reads a point in time given as a duration back from now (1h,
// 30m) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, apierr.InvalidRequest("since %q is neither a duration back from now (1h, 30m) nor an RFC 3339 time (2026-01-01T00:00:00Z).", clipParam(s))
}

// eventTypes checks and normalizes webhook event names (message.* spellings too).
func eventTypes(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		e, ok := webhooks.NormalizeEventName(n)
		if !ok {
			return nil, apierr.InvalidRequest("%q is not a webhook event; the events are %s.", clipParam(n), strings.Join(webhooks.Events(), ", "))
		}
		out = append(out, e)
	}
	return out, nil
}

type replayRequest struct {
	Since   string   `json:"since"` // a duration back from now, or an RFC 3339 time
	Until   string   `json:"until"`
	Types   []string `json:"types"`
	EmailID string   `json:"email_id"`
}

type replayJSON struct {
	Object    string  `json:"object"`
	WebhookID string  `json:"webhook_id"`
	Matched   int     `json:"matched"`
	Queued    int     `json:"queued"`
	Held      bool    `json:"held"`
	HasMore   bool    `json:"has_more"`
	NextSince *string `json:"next_since"`
}

// replayWebhookRange serves POST /v1/webhooks/{id}/replay: the past events
// the filter picks, queued for the endpoint again (at most
// webhooks.MaxReplay; has_more and next_since say where to go on).
func (h *handler) replayWebhookRange(w http.ResponseWriter, r *http.Request) error {
	var req replayRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	now := h.d.Clock.Now()
	var f webhooks.ReplayFilter
	var err error
	if req.Since != "" {
		if f.Since, err = parseSince(req.Since, now); err != nil {
			return err
		}
	}
	if req.Until != "" {
		if f.Until, err = parseSince(req.Until, now); err != nil {
			return apierr.InvalidRequest("until %q is neither a duration back from now nor an RFC 3339 time.", clipParam(req.Until))
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return apierr.InvalidRequest("until must be after since.")
	}
	if f.Types, err = eventTypes(req.Types); err != nil {
		return err
	}
	if len(req.EmailID) > 100 {
		return apierr.InvalidRequest("email_id is not an email id.")
	}
	f.EmailID = req.EmailID
	res, err := h.d.Services.Webhooks.ReplayRange(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, r.PathValue("id"), f)
	if err != nil {
		return err
	}
	out := replayJSON{Object: "webhook_replay", WebhookID: r.PathValue("id"), Matched: res.Matched, Queued: res.Queued, Held: res.Held, HasMore: res.More}
	if res.More && !res.NextSince.IsZero() {
		s := ts(res.NextSince)
		out.NextSince = &s
	}
	writeJSON(w, http.StatusAccepted, out)
	return nil
}
