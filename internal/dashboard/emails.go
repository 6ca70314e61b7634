package dashboard

import (
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/delivery"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/webhooks"
)

// The log's filters run over the sending service's newest-first list: a
// page reads at most scanRows emails and shows at most pageRows matches,
// then offers to continue where it stopped, so a rare match in a long log
// costs several clicks rather than one slow page (docs/decisions.md).
const (
	pageRows = 50
	scanRows = 1000
	readRows = 100 // per List call
)

// statuses are the log's status filter's choices.
var statuses = []sending.EmailStatus{sending.StatusScheduled, sending.StatusQueued, sending.StatusSending, sending.StatusSent,
	sending.StatusDelivered, sending.StatusBounced, sending.StatusComplained, sending.StatusFailed, sending.StatusCancelled}

// emailFilter is the log's query string.
type emailFilter struct {
	Status, Recipient, Tag, From, To string
	from, to                         time.Time // zero: open
}

func readFilter(q url.Values) (emailFilter, error) {
	f := emailFilter{Status: q.Get("status"), Recipient: strings.TrimSpace(q.Get("recipient")), Tag: strings.TrimSpace(q.Get("tag")),
		From: q.Get("from"), To: q.Get("to")}
	if f.Status != "" && !slices.Contains(statuses, sending.EmailStatus(f.Status)) {
		return f, apierr.InvalidRequest("Unknown status %q.", f.Status)
	}
	for _, d := range []struct {
		in  string
		out *time.Time
		add int
	}{{f.From, &f.from, 0}, {f.To, &f.to, 1}} {
		if d.in == "" {
			continue
		}
		t, err := time.Parse("2006-01-02", d.in)
		if err != nil {
			return f, apierr.InvalidRequest("Dates are YYYY-MM-DD; %q is not one.", d.in)
		}
		*d.out = t.AddDate(0, 0, d.add) // to: up to the end of that day
	}
	return f, nil
}

func (f emailFilter) match(e *sending.Email) bool {
	if f.Status != "" && string(e.Status) != f.Status {
		return false
	}
	if !f.from.IsZero() && e.CreatedAt.Before(f.from) {
		return false
	}
	if f.Recipient != "" {
		want := strings.ToLower(f.Recipient)
		found := false
		for _, l := range [][]string{e.To, e.Cc, e.Bcc} {
			for _, a := range l {
				found = found || strings.Contains(strings.ToLower(a), want)
			}
		}
		if !found {
			return false
		}
	}
	if f.Tag != "" {
		k, v, hasValue := strings.Cut(f.Tag, ":")
		got, ok := e.Tags[k]
		if !ok || (hasValue && got != v) {
			return false
		}
	}
	return true
}

// query is the filter as a query string, for the next page's link.
func (f emailFilter) query(after string) string {
	v := urlValues{"status": f.Status, "recipient": f.Recipient, "tag": f.Tag, "from": f.From, "to": f.To, "after": after}
	return v.encode()
}

// parseCursor reads a listing's "after" parameter, <unix ms>.<id>, as the
// "older" links write it.
func parseCursor(a string) (int64, string, error) {
	at, id, _ := strings.Cut(a, ".")
	ms, err := strconv.ParseInt(at, 10, 64)
	if err != nil || ms < 0 || len(id) > 100 {
		return 0, "", apierr.InvalidRequest("The page link is not valid.")
	}
	return ms, id, nil
}

// cursor is the "after" parameter that continues below (ms, id).
func cursor(ms int64, id string) string { return strconv.FormatInt(ms, 10) + "." + id }

type emailsView struct {
	Filter   emailFilter
	Statuses []sending.EmailStatus
	Emails   []sending.Email
	Scanned  int
	Next     string // the next page's query string, "" at the end
}

func (x *Dashboard) emails(w http.ResponseWriter, r *http.Request, s *session) error {
	f, err := readFilter(r.URL.Query())
	if err != nil {
		return err
	}
	var pos *sending.Position
	if a := r.URL.Query().Get("after"); a != "" {
		ms, id, err := parseCursor(a)
		if err != nil {
			return err
		}
		pos = &sending.Position{At: ms, ID: id}
	} else if !f.to.IsZero() {
		pos = &sending.Position{At: store.Millis(f.to)} // older than the end of the "to" day
	}
	v := emailsView{Filter: f, Statuses: statuses}
	c := sending.CallerFor(s.key)
	for v.Scanned < scanRows && len(v.Emails) < pageRows {
		list, err := x.d.Sending.List(r.Context(), c, readRows, pos)
		if err != nil {
			return err
		}
		done := len(list) < readRows
		for i := range list {
			e := &list[i]
			v.Scanned++
			pos = &sending.Position{At: store.Millis(e.CreatedAt), ID: e.ID}
			if !f.from.IsZero() && e.CreatedAt.Before(f.from) {
				done = true // newest first: nothing older can match
				break
			}
			if f.match(e) {
				v.Emails = append(v.Emails, *e)
			}
			if len(v.Emails) == pageRows {
				break
			}
		}
		if done {
			pos = nil
			break
		}
	}
	if pos != nil {
		v.Next = f.query(cursor(pos.At, pos.ID))
	}
	x.render(w, r, s, http.StatusOK, "emails", v)
	return nil
}

// header is one line of the email's header table.
type header struct{ Name, Value string }

type timelineEntry struct {
	Type string
	At   time.Time
	Data string // the event's data as indented JSON
}

type emailView struct {
	Email       *sending.Email
	Headers     []header
	Timeline    []timelineEntry
	HasHTML     bool
	HasText     bool
	Attachments []attachmentRow
	Attempts    []delivery.Attempt  // each SMTP attempt, oldest first
	Deliveries  []webhooks.Delivery // of its events; nil when the key may not read webhooks
	Webhooks    bool                // the key may read webhooks (the section is shown)
}

// attachmentRow is one sent attachment; N is its 1-based number, as in the
// API's att_N ids.
type attachmentRow struct {
	N                     int
	Filename, ContentType string
	Size                  int
	Inline                bool
}

// emailDeliveries bounds the webhook deliveries an email's page lists.
const emailDeliveries = 100

func (x *Dashboard) email(w http.ResponseWriter, r *http.Request, s *session) error {
	c := sending.CallerFor(s.key)
	e, content, err := x.d.Sending.Read(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := emailView{Email: e, HasHTML: content.HTML != "", HasText: content.Text != ""}
	v.Headers = []header{{"From", e.From}, {"To", strings.Join(e.To, ", ")}}
	for _, h := range []header{{"Cc", strings.Join(e.Cc, ", ")}, {"Bcc", strings.Join(e.Bcc, ", ")}, {"Reply-To", strings.Join(e.ReplyTo, ", ")}} {
		if h.Value != "" {
			v.Headers = append(v.Headers, h)
		}
	}
	v.Headers = append(v.Headers, header{"Subject", e.Subject}, header{"Message-ID", e.MessageID})
	for _, k := range slices.Sorted(maps.Keys(content.Headers)) {
		v.Headers = append(v.Headers, header{k, content.Headers[k]})
	}
	for _, ev := range e.Events {
		data, _ := json.MarshalIndent(ev.Data, "", "  ")
		v.Timeline = append(v.Timeline, timelineEntry{Type: ev.Type, At: ev.CreatedAt, Data: string(data)})
	}
	atts, err := x.d.Sending.Attachments(r.Context(), c, e.ID)
	if err != nil {
		return err
	}
	for i, a := range atts {
		v.Attachments = append(v.Attachments, attachmentRow{N: i + 1, Filename: a.Filename, ContentType: a.ContentType, Size: len(a.Content), Inline: a.ContentID != ""})
	}
	if x.d.Delivery != nil {
		if v.Attempts, err = x.d.Delivery.Attempts(r.Context(), s.key.WorkspaceID, e.ID); err != nil {
			return err
		}
	}
	// The deliveries are the webhooks area's: shown to a key that may read
	// it (GET /v1/webhooks/... needs the workspace scope), narrowed to its mailbox.
	if scope, _ := s.key.Denied(box); scope == "" && len(e.Events) > 0 {
		v.Webhooks = true
		evIDs := make([]string, 0, len(e.Events))
		for _, ev := range e.Events {
			evIDs = append(evIDs, ev.ID)
		}
		if v.Deliveries, err = x.d.Webhooks.ListDeliveries(r.Context(), s.key.WorkspaceID, webhooks.DeliveryQuery{BoundTo: s.key.MailboxID, EventIDs: evIDs, Limit: emailDeliveries}); err != nil {
			return err
		}
	}
	x.render(w, r, s, http.StatusOK, "email", v)
	return nil
}

// emailAttachment downloads a sent attachment (GET
// /v1/emails/{id}/attachments/att_N/content): always as a download, under a
// sandbox policy in case a browser shows it anyway.
func (x *Dashboard) emailAttachment(w http.ResponseWriter, r *http.Request, s *session) error {
	atts, err := x.d.Sending.Attachments(r.Context(), sending.CallerFor(s.key), r.PathValue("id"))
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 || n > len(atts) {
		return errNotFound("attachment")
	}
	a := atts[n-1]
	ct := a.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(a.Content)))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.Content)
	return nil
}

// emailBody is the document of the message iframe: the HTML body (or the
// text one) as the sender wrote it.
func (x *Dashboard) emailBody(w http.ResponseWriter, r *http.Request, s *session) error {
	content, err := x.d.Sending.Content(r.Context(), sending.CallerFor(s.key), r.PathValue("id"))
	if err != nil {
		return err
	}
	serveBody(w, r, content.HTML, content.Text)
	return nil
}

// serveBody writes a message's body as the document of a sandboxed iframe,
// under bodyCSP: the iframe's sandbox attribute and the CSP's sandbox keep
// it from running script, reaching the dashboard's origin or fetching
// anything; neuter drops what would open a connection all the same (a read
// receipt). ?part=text, or no HTML, serves the text as text/plain.
func serveBody(w http.ResponseWriter, r *http.Request, html, text string) {
	h := w.Header()
	h.Set("Content-Security-Policy", bodyCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	if html == "" || r.URL.Query().Get("part") == "text" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(text))
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(neuter(html)))
}
