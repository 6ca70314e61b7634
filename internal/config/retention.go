package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention is how long the bulky parts of mail are kept (issue #42):
// past it the background purge (internal/retention) removes them, while
// each email's and message's metadata, its status and the analytics
// counters stay. 0 keeps them for ever.
type Retention struct {
	// Bodies: the html, text and attachments of emails that reached a
	// final status (MAILROOM_RETAIN_BODIES; default 30d).
	Bodies time.Duration
	// Events: events already fanned out to webhooks, the timeline entries
	// of GET /v1/emails/{id} (MAILROOM_RETAIN_EVENTS; default 90d; at
	// least 7d, past every webhook retry).
	Events time.Duration
	// Received: the raw source of received messages, and with it their
	// attachments; headers, text and html stay (MAILROOM_RETAIN_RECEIVED;
	// default 0).
	Received time.Duration
	// WebhookLogs: webhook delivery attempts (MAILROOM_RETAIN_WEBHOOK_LOGS;
	// default 30d, at least 1d).
	WebhookLogs time.Duration
	// RequestLogs: the request log of API calls (MAILROOM_RETAIN_REQUEST_LOGS;
	// default 30d, at least 1d; 0 keeps no request log at all).
	RequestLogs time.Duration
}

// loadRetention reads the Retention, with the problems in words.
func loadRetention(get func(k, def string) string) (Retention, []error) {
	var errs []error
	days := func(k, def string, least time.Duration) time.Duration {
		v := strings.TrimSpace(get(k, def))
		d, err := parseDays(v)
		if err != nil || (d != 0 && d < least) {
			errs = append(errs, fmt.Errorf("%s: %q is not 0 (keep for ever) or a duration of at least %s, such as 30d or 720h", k, v, least))
			d, _ = parseDays(def)
		}
		return d
	}
	r := Retention{
		Bodies:      days("MAILROOM_RETAIN_BODIES", "30d", time.Hour),
		Events:      days("MAILROOM_RETAIN_EVENTS", "90d", 7*24*time.Hour),
		Received:    days("MAILROOM_RETAIN_RECEIVED", "0", time.Hour),
		WebhookLogs: days("MAILROOM_RETAIN_WEBHOOK_LOGS", "30d", 24*time.Hour),
		RequestLogs: days("MAILROOM_RETAIN_REQUEST_LOGS", "30d", 24*time.Hour),
	}
	if r.WebhookLogs == 0 {
		r.WebhookLogs = 30 * 24 * time.Hour
		errs = append(errs, fmt.Errorf("MAILROOM_RETAIN_WEBHOOK_LOGS: 0 is not allowed (delivery logs are always purged); give days, such as 30d"))
	}
	return r, errs
}

// parseDays reads "0", "30d" or a Go duration ("720h").
func parseDays(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(v, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("bad days %q", v)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}
