package httpapi

import (
	"net/http"
	"strconv"

	"mailroom/internal/apierr"
	"mailroom/internal/inbound"
)

// messageJSON is a stored message: the email.received payload's fields
// with the message's own flags beside them.
type messageJSON struct {
	inbound.Payload
	ID         string `json:"id"`
	Direction  string `json:"direction"`
	Unread     bool   `json:"unread"`
	Archived   bool   `json:"archived"`
	ReceivedAt string `json:"received_at"`
}

type messageList struct {
	Messages []messageJSON `json:"messages"`
	listMeta
}

type archiveRequest struct {
	Archived *bool `json:"archived"`
	Unread   *bool `json:"unread"`
}

type threadJSON struct {
	ID            string `json:"id"`
	MailboxID     string `json:"mailbox_id"`
	Subject       string `json:"subject"`
	MessageCount  int    `json:"message_count"`
	LastMessageAt string `json:"last_message_at"`
	CreatedAt     string `json:"created_at"`
}

type threadList struct {
	Threads []threadJSON `json:"threads"`
	listMeta
}

type threadFull struct {
	threadJSON
	Messages []messageJSON `json:"messages"`
}

func (h *handler) messageOut(m *inbound.Message) messageJSON {
	return messageJSON{Payload: h.d.Services.Inbound.Payload(m), ID: m.ID, Direction: m.Direction, Unread: m.Unread, Archived: m.Archived, ReceivedAt: ts(m.ReceivedAt)}
}

func threadOut(t *inbound.Thread) threadJSON {
	return threadJSON{ID: t.ID, MailboxID: t.MailboxID, Subject: t.Subject, MessageCount: t.MessageCount, LastMessageAt: ts(t.LastMessageAt), CreatedAt: ts(t.CreatedAt)}
}

// reader is who reads received mail: the key's workspace and binding and
// the mailbox_id asked for.
func reader(r *http.Request) inbound.Reader {
	k := apiKey(r)
	return inbound.Reader{WorkspaceID: k.WorkspaceID, BoundTo: k.MailboxID, MailboxID: r.URL.Query().Get("mailbox_id")}
}

func queryFlag(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apierr.InvalidRequest("%s must be true or false.", name)
	}
	return b, nil
}

func (h *handler) listMessages(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	f := inbound.MessageFilter{ThreadID: r.URL.Query().Get("thread_id"), Limit: pg.Limit + 1}
	if f.UnreadOnly, err = queryFlag(r, "unread_only"); err != nil {
		return err
	}
	if f.IncludeArchived, err = queryFlag(r, "include_archived"); err != nil {
		return err
	}
	if pg.After != nil {
		f.Before = &inbound.Position{At: pg.After.At, ID: pg.After.ID}
	}
	ms, err := h.d.Services.Inbound.Messages(r.Context(), reader(r), f)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(ms), func(i int) Cursor { return Cursor{At: ms[i].ReceivedAt.UnixMilli(), ID: ms[i].ID} })
	out := make([]messageJSON, 0, n)
	for _, m := range ms[:n] {
		out = append(out, h.messageOut(m))
	}
	writeJSON(w, http.StatusOK, messageList{Messages: out, listMeta: meta})
	return nil
}

func (h *handler) getMessage(w http.ResponseWriter, r *http.Request) error {
	m, err := h.d.Services.Inbound.Message(r.Context(), reader(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.messageOut(m))
	return nil
}

func (h *handler) archiveMessage(w http.ResponseWriter, r *http.Request) error {
	var req archiveRequest
	if r.ContentLength != 0 {
		if err := decodeRequest(w, r, &req); err != nil {
			return err
		}
	}
	m, err := h.d.Services.Inbound.SetFlags(r.Context(), reader(r), r.PathValue("id"), req.Archived, req.Unread)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.messageOut(m))
	return nil
}

func (h *handler) getAttachment(w http.ResponseWriter, r *http.Request) error {
	ct, data, err := h.d.Services.Inbound.Attachment(r.Context(), reader(r), r.PathValue("id"), r.PathValue("filename"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return nil
}

func (h *handler) listThreads(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	var before *inbound.Position
	if pg.After != nil {
		before = &inbound.Position{At: pg.After.At, ID: pg.After.ID}
	}
	ts, err := h.d.Services.Inbound.Threads(r.Context(), reader(r), before, pg.Limit+1)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(ts), func(i int) Cursor { return Cursor{At: ts[i].LastMessageAt.UnixMilli(), ID: ts[i].ID} })
	out := make([]threadJSON, 0, n)
	for i := range ts[:n] {
		out = append(out, threadOut(&ts[i]))
	}
	writeJSON(w, http.StatusOK, threadList{Threads: out, listMeta: meta})
	return nil
}

func (h *handler) getThread(w http.ResponseWriter, r *http.Request) error {
	t, ms, err := h.d.Services.Inbound.Thread(r.Context(), reader(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := threadFull{threadJSON: threadOut(t), Messages: make([]messageJSON, 0, len(ms))}
	for _, m := range ms {
		out.Messages = append(out.Messages, h.messageOut(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// searchHitJSON is one GET /v1/search hit (the spec does not show one;
// docs/decisions.md "Search").
type searchHitJSON struct {
	MessageID  string  `json:"message_id"`
	ThreadID   string  `json:"thread_id"`
	Mailbox    string  `json:"mailbox"`
	Direction  string  `json:"direction"`
	From       string  `json:"from"`
	FromName   *string `json:"from_name"`
	Subject    string  `json:"subject"`
	Excerpt    string  `json:"excerpt"`
	Score      float64 `json:"score"`
	Unread     bool    `json:"unread"`
	Archived   bool    `json:"archived"`
	ReceivedAt string  `json:"received_at"`
}

type searchResult struct {
	Hits []searchHitJSON `json:"hits"`
	listMeta
}

func (h *handler) search(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 20, 50, false)
	if err != nil {
		return err
	}
	hits, err := h.d.Services.Inbound.Search(r.Context(), reader(r), r.URL.Query().Get("q"), pg.Limit+1)
	if err != nil {
		return err
	}
	meta, n := ranked(len(hits), pg.Limit)
	out := searchResult{Hits: make([]searchHitJSON, 0, n), listMeta: meta}
	for _, x := range hits[:n] {
		hj := searchHitJSON{MessageID: x.MessageID, ThreadID: x.ThreadID, Mailbox: x.Mailbox, Direction: x.Direction, From: x.From,
			Subject: x.Subject, Excerpt: x.Excerpt, Score: x.Score, Unread: x.Unread, Archived: x.Archived, ReceivedAt: ts(x.ReceivedAt)}
		if x.FromName != "" {
			hj.FromName = &x.FromName
		}
		out.Hits = append(out.Hits, hj)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// composeRequest is POST /v1/messages.
type composeRequest struct {
	To               []string                    `json:"to"`
	Cc               []string                    `json:"cc"`
	Subject          string                      `json:"subject"`
	Body             string                      `json:"body"`
	ReplyToMessageID string                      `json:"reply_to_message_id"`
	Attachments      []inbound.ComposeAttachment `json:"attachments"`
	TrackOpens       *bool                       `json:"track_opens"`
	SendAt           string                      `json:"send_at"`
}

// sentJSON answers POST /v1/messages: the sent message (200) or the
// booking (202).
type sentJSON struct {
	ID          *string `json:"id"`
	ThreadID    *string `json:"thread_id"`
	EmailID     string  `json:"email_id"`
	ScheduledID *string `json:"scheduled_id,omitempty"`
	Status      string  `json:"status"`
}

func (h *handler) composeMessage(w http.ResponseWriter, r *http.Request) error {
	body, err := readSendBody(w, r, maxSendBody, false) // attachments travel in the body
	if err != nil {
		return err
	}
	var req composeRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	out, err := h.d.Services.Inbound.Send(r.Context(), reader(r), caller(r), inbound.Compose{To: req.To, Cc: req.Cc, Subject: req.Subject, Body: req.Body,
		ReplyToMessageID: req.ReplyToMessageID, Attachments: req.Attachments, TrackOpens: req.TrackOpens, SendAt: req.SendAt})
	if err != nil {
		return err
	}
	writeSent(w, out)
	return nil
}

// replyAllRequest is POST /v1/messages/{id}/reply-all.
type replyAllRequest struct {
	Body        string                      `json:"body"`
	Attachments []inbound.ComposeAttachment `json:"attachments"`
	TrackOpens  *bool                       `json:"track_opens"`
}

// forwardRequest is POST /v1/messages/{id}/forward.
type forwardRequest struct {
	To   []string `json:"to"`
	Body string   `json:"body"`
	Mode string   `json:"mode"`
}

// sentStatus is a compose's answer: 202 when it was booked for later.
func sentStatus(s *inbound.Sent) int {
	if s.Booked() {
		return http.StatusAccepted
	}
	return http.StatusOK
}

func writeSent(w http.ResponseWriter, out *inbound.Sent) {
	res := sentJSON{EmailID: out.EmailID, Status: out.Status}
	if out.MessageID != "" {
		res.ID, res.ThreadID = &out.MessageID, &out.ThreadID
	}
	if out.ScheduledID != "" {
		res.ScheduledID = &out.ScheduledID
	}
	writeJSON(w, sentStatus(out), res)
}

func (h *handler) replyAll(w http.ResponseWriter, r *http.Request) error {
	body, err := readSendBody(w, r, maxSendBody, false)
	if err != nil {
		return err
	}
	var req replyAllRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	out, err := h.d.Services.Inbound.ReplyAll(r.Context(), reader(r), caller(r), r.PathValue("id"), req.Body, req.Attachments, req.TrackOpens)
	if err != nil {
		return err
	}
	writeSent(w, out)
	return nil
}

func (h *handler) forwardMessage(w http.ResponseWriter, r *http.Request) error {
	var req forwardRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	out, err := h.d.Services.Inbound.Forward(r.Context(), reader(r), caller(r), r.PathValue("id"), req.To, req.Body, req.Mode)
	if err != nil {
		return err
	}
	writeSent(w, out)
	return nil
}

// scheduledJSON is a receive-side scheduled send: an entry of GET
// /v1/messages/scheduled, and GET /v1/messages/scheduled/{id} with the
// outcome read from the sending service (the booking is its scheduled
// email). mailbox_id, thread_id and message_id are null for a scheduled
// email of POST /v1/emails read here.
type scheduledJSON struct {
	ScheduledID string   `json:"scheduled_id"`
	EmailID     string   `json:"email_id"`
	Status      string   `json:"status"`
	SendAt      *string  `json:"send_at"`
	From        string   `json:"from"`
	To          []string `json:"to"`
	Cc          []string `json:"cc"`
	Subject     string   `json:"subject"`
	MailboxID   *string  `json:"mailbox_id"`
	ThreadID    *string  `json:"thread_id"`
	MessageID   *string  `json:"message_id"`
	LastError   *string  `json:"last_error"`
	CreatedAt   *string  `json:"created_at"`
}

type scheduledList struct {
	Scheduled []scheduledJSON `json:"scheduled"`
	listMeta
}

func bookingOut(b *inbound.Booking) scheduledJSON {
	at, created := ts(b.SendAt), ts(b.CreatedAt)
	out := scheduledJSON{ScheduledID: b.ScheduledID, EmailID: b.EmailID, Status: b.Status, SendAt: &at, From: b.Mailbox, To: b.To, Cc: b.Cc,
		Subject: b.Subject, MailboxID: &b.MailboxID, ThreadID: opt(b.ThreadID), MessageID: opt(b.MessageID), CreatedAt: &created}
	if out.To == nil {
		out.To = []string{}
	}
	if out.Cc == nil {
		out.Cc = []string{}
	}
	return out
}

func (h *handler) listScheduledMessages(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	var after *inbound.Position
	if pg.After != nil {
		after = &inbound.Position{At: pg.After.At, ID: pg.After.ID}
	}
	bs, err := h.d.Services.Inbound.Bookings(r.Context(), reader(r), after, pg.Limit+1)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(bs), func(i int) Cursor { return Cursor{At: bs[i].SendAt.UnixMilli(), ID: bs[i].EmailID} })
	out := make([]scheduledJSON, 0, n)
	for i := range bs[:n] {
		out = append(out, bookingOut(&bs[i]))
	}
	writeJSON(w, http.StatusOK, scheduledList{Scheduled: out, listMeta: meta})
	return nil
}

// booked is the receive-side booking id names, in the key's reach. A key
// bound to a mailbox reaches its mailbox's bookings only; an unbound key
// also reaches the workspace's other scheduled emails (nil, no error) by
// their email id (a sch_ id names a booking only).
func (h *handler) booked(r *http.Request, id string) (*inbound.Booking, error) {
	b, err := h.d.Services.Inbound.Booking(r.Context(), reader(r), id)
	if e, ok := apierr.As(err); ok && e.Status == http.StatusNotFound && apiKey(r).MailboxID == "" && !inbound.IsScheduledID(id) {
		return nil, nil
	}
	return b, err
}

func (h *handler) getScheduledMessage(w http.ResponseWriter, r *http.Request) error {
	b, err := h.booked(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	e, err := h.d.Services.Sending.Get(r.Context(), caller(r), inbound.BookedEmail(r.PathValue("id")))
	if err != nil {
		return err
	}
	if e.ScheduledAt == nil {
		return apierr.NotFound("scheduled message")
	}
	out := scheduledJSON{ScheduledID: e.ID, EmailID: e.ID, From: e.From, To: e.To, Cc: []string{}, Subject: e.Subject}
	if b != nil {
		out = bookingOut(b)
	}
	out.Status = string(e.Status) // the outcome, whenever asked
	at := ts(*e.ScheduledAt)
	out.SendAt = &at
	if out.To == nil {
		out.To = []string{}
	}
	if e.LastError != "" {
		out.LastError = &e.LastError
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
