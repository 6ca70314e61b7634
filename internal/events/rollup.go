package events

import (
	"bytes"
	"encoding/json"
	"strings"

	"mailroom/internal/analytics"
	"mailroom/internal/store"
)

// countEvent adds an email event to the analytics rollups in the raising
// transaction (analytics.Add), so the counters move exactly when the event
// exists. Per recipient named in data.to: email.sent counts sent,
// email.delivered delivered, email.complained complained; email.bounced
// counts bounced and, unless it is a report after hand-over
// (AfterDelivery), sent as well: a recipient refused at hand-over was
// attempted but got no email.sent. Test sends (test_mode) never count.
func countEvent(tx *store.Tx, ev Event) {
	var c analytics.Counts
	switch ev.Type {
	case EmailSent, EmailDelivered, EmailBounced, EmailComplained:
	default:
		return
	}
	n, ok := recipientsOf(&ev)
	if !ok {
		return
	}
	switch ev.Type {
	case EmailSent:
		c.Sent = n
	case EmailDelivered:
		c.Delivered = n
	case EmailBounced:
		c.Bounced = n
		if !ev.AfterDelivery {
			c.Sent = n
		}
	case EmailComplained:
		c.Complained = n
	}
	d := analytics.Dims{MailClass: ev.MailClass, TemplateID: ev.TemplateID}
	if from, ok := ev.Data["from"].(string); ok {
		d.Domain = addressDomain(from)
	}
	switch t := ev.Data["tags"].(type) {
	case map[string]string:
		d.Tags = t
	case json.RawMessage:
		_ = json.Unmarshal(t, &d.Tags)
	}
	analytics.Add(tx, ev.WorkspaceID, ev.CreatedAt, d, c)
}

// recipientsOf is how many recipients an email event names in data.to (at
// least one), decoding RawData into ev.Data when only that is set; ok is
// false for test sends (test_mode), which no counter counts.
func recipientsOf(ev *Event) (n int64, ok bool) {
	if ev.RawData != nil {
		// Only the simulator of test addresses raises pre-encoded data.
		if bytes.Contains(ev.RawData, []byte(`"test_mode":true`)) {
			return 0, false
		}
		var d struct {
			From string            `json:"from"`
			To   []string          `json:"to"`
			Tags map[string]string `json:"tags"`
		}
		if json.Unmarshal(ev.RawData, &d) != nil {
			return 0, false
		}
		ev.Data = map[string]any{"from": d.From, "to": d.To, "tags": d.Tags}
	}
	if t, _ := ev.Data["test_mode"].(bool); t {
		return 0, false
	}
	n = 1
	switch to := ev.Data["to"].(type) {
	case []string:
		n = int64(max(1, len(to)))
	case []any:
		n = int64(max(1, len(to)))
	}
	return n, true
}

// addressDomain is the domain of "Name <a@b>" or "a@b", lowercased.
func addressDomain(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '<'); i >= 0 {
		s = strings.TrimSuffix(s[i+1:], ">")
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return strings.ToLower(strings.TrimSpace(s[i+1:]))
	}
	return ""
}
