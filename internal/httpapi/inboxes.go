package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/inbound"
)

// The Resend SDKs' inboxes (/v1/inboxes…): Mailroom's mailboxes, their
// threads and messages, in the shapes the SDKs declare. An inbox is named
// by its id or its address; a key bound to a mailbox reaches only its own.

type inboxJSON struct {
	Object           string  `json:"object"`
	ID               string  `json:"id"`
	Name             string  `json:"name"`
	EmailAddress     string  `json:"email_address"`
	DomainID         string  `json:"domain_id"`
	ReceivingAddress *string `json:"receiving_address"`
	FromName         *string `json:"from_name"` // the mailbox's one name, which its sent mail shows
	Unread           int     `json:"unread"`
	Drafts           int     `json:"drafts"`
	LastReceived     *string `json:"last_received"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
}

type inboxList struct {
	Object  string      `json:"object"`
	HasMore bool        `json:"has_more"`
	Data    []inboxJSON `json:"data"`
}

type createInboxRequest struct {
	EmailAddress *string `json:"email_address"`
	Name         *string `json:"name"`
	FromName     *string `json:"from_name"`
	Forwarding   *bool   `json:"forwarding"`
}

type updateInboxRequest struct {
	Name     *string `json:"name"`
	FromName *string `json:"from_name"`
}

type removedJSON struct {
	Object  string `json:"object"`
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

type inboxThreadJSON struct {
	Object         string   `json:"object"`
	ID             string   `json:"id"`
	Subject        *string  `json:"subject"`
	From           *string  `json:"from"`
	To             []string `json:"to"`
	Cc             []string `json:"cc"`
	Bcc            []string `json:"bcc"`
	Labels         []string `json:"labels"` // always empty: no labels
	EmailCount     int      `json:"email_count"`
	HasAttachment  bool     `json:"has_attachment"`
	HasDraft       bool     `json:"has_draft"`
	Read           bool     `json:"read"`
	ReceivedAt     string   `json:"received_at"`
	Folder         string   `json:"folder"`
	MatchedEmailID *string  `json:"matched_email_id,omitempty"` // search only
}

type inboxThreadList struct {
	Object  string            `json:"object"`
	HasMore bool              `json:"has_more"`
	Data    []inboxThreadJSON `json:"data"`
}

type inboxAttachmentJSON struct {
	ID       string `json:"id"` // the filename, as on /v1/emails/receiving
	Filename string `json:"filename"`
	Size     int    `json:"size"`
}

type inboxMessageJSON struct {
	ID          string                `json:"id"`
	ThreadID    string                `json:"thread_id"`
	Direction   string                `json:"direction"` // inbound or outbound
	From        string                `json:"from"`
	To          []string              `json:"to"`
	Cc          []string              `json:"cc"`
	Bcc         []string              `json:"bcc"`
	ReplyTo     []string              `json:"reply_to"`
	Subject     *string               `json:"subject"`
	MessageID   *string               `json:"message_id"`
	HTML        *string               `json:"html"`
	Text        *string               `json:"text"`
	Attachments []inboxAttachmentJSON `json:"attachments"`
	Read        bool                  `json:"read"`
	ReceivedAt  string                `json:"received_at"`
}

type inboxMessageList struct {
	Object  string             `json:"object"`
	HasMore bool               `json:"has_more"`
	Data    []inboxMessageJSON `json:"data"`
}

type updateThreadRequest struct {
	Read   *bool   `json:"read"`
	Folder *string `json:"folder"`
}

// addrs is an address field the SDKs send as one string or a list.
type addrs []string

func (a *addrs) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*a = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = addrs{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return apierr.InvalidRequest("an address field must be a string or a list of strings.")
	}
	*a = many
	return nil
}

type sdkAttachment struct {
	Filename    *string `json:"filename"`
	Content     *string `json:"content"` // base64
	ContentType *string `json:"content_type"`
	Path        *string `json:"path"`
	ContentID   *string `json:"content_id"`
}

type inboxReplyRequest struct {
	Cc          addrs             `json:"cc"`
	Bcc         addrs             `json:"bcc"`
	HTML        *string           `json:"html"`
	Text        *string           `json:"text"`
	Subject     *string           `json:"subject"`
	ReplyAll    *bool             `json:"reply_all"`
	Attachments []sdkAttachment   `json:"attachments"`
	Headers     map[string]string `json:"headers"`
}

type inboxForwardRequest struct {
	To          addrs             `json:"to"`
	Cc          addrs             `json:"cc"`
	Bcc         addrs             `json:"bcc"`
	HTML        *string           `json:"html"`
	Text        *string           `json:"text"`
	Subject     *string           `json:"subject"`
	Attachments []sdkAttachment   `json:"attachments"`
	Headers     map[string]string `json:"headers"`
}

type inboxSentJSON struct {
	ID        string  `json:"id"` // the sent email (GET /v1/emails/{id})
	MessageID *string `json:"message_id"`
	ThreadID  *string `json:"thread_id"`
	Status    string  `json:"status"`
}

// inboxFolders are the SDK's folders; a thread is in inbox, archive or sent.
var inboxFolders = []string{"inbox", "archive", "spam", "sent", "trash"}

func (h *handler) inboxOut(r *http.Request, m *inbound.Mailbox) (inboxJSON, error) {
	last, err := h.d.Services.Inbound.LastReceived(r.Context(), m.WorkspaceID, m.ID)
	if err != nil {
		return inboxJSON{}, err
	}
	created := ts(m.CreatedAt)
	out := inboxJSON{Object: "inbox", ID: m.ID, Name: m.Name, EmailAddress: m.Address, DomainID: m.DomainID, FromName: opt(m.Name),
		Unread: m.UnreadCount, CreatedAt: created, UpdatedAt: created}
	if last != nil {
		s := ts(*last)
		out.LastReceived = &s
	}
	return out, nil
}

// inbox is the mailbox the path's {inbox} names, by id or address, within
// the key's reach.
func (h *handler) inbox(r *http.Request) (*inbound.Mailbox, error) {
	k, ref := apiKey(r), r.PathValue("inbox")
	if !strings.Contains(ref, "@") {
		return h.d.Services.Inbound.Mailbox(r.Context(), k.WorkspaceID, k.MailboxID, ref)
	}
	ms, err := h.d.Services.Inbound.Mailboxes(r.Context(), k.WorkspaceID, k.MailboxID)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if strings.EqualFold(ms[i].Address, ref) {
			return &ms[i], nil
		}
	}
	return nil, apierr.NotFound("mailbox")
}

// inboxReader reads within the inbox the path names.
func (h *handler) inboxReader(r *http.Request) (inbound.Reader, error) {
	m, err := h.inbox(r)
	if err != nil {
		return inbound.Reader{}, err
	}
	k := apiKey(r)
	return inbound.Reader{WorkspaceID: k.WorkspaceID, BoundTo: k.MailboxID, MailboxID: m.ID}, nil
}

func (h *handler) createInbox(w http.ResponseWriter, r *http.Request) error {
	var req createInboxRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	k := apiKey(r)
	if k.MailboxID != "" {
		return errBoundKeyCreatesNoMailbox()
	}
	if req.EmailAddress == nil || !strings.Contains(*req.EmailAddress, "@") {
		return apierr.InvalidRequest("email_address is required: the inbox's full address.")
	}
	if req.Forwarding != nil && *req.Forwarding {
		return apierr.InvalidRequest("forwarding is not offered; forward a message with POST /v1/messages/{id}/forward.")
	}
	name, err := inboxName(req.Name, req.FromName)
	if err != nil {
		return err
	}
	m, err := h.d.Services.Inbound.CreateMailbox(r.Context(), k.WorkspaceID, *req.EmailAddress, name)
	if err != nil {
		return err
	}
	out, err := h.inboxOut(r, m)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// inboxName is the mailbox's one name, from name or from_name (both given
// must agree).
func inboxName(name, fromName *string) (string, error) {
	switch {
	case name != nil && fromName != nil && *name != *fromName:
		return "", apierr.InvalidRequest("name and from_name differ; a Mailroom mailbox has one name, shown on the mail it sends.")
	case name != nil:
		return *name, nil
	case fromName != nil:
		return *fromName, nil
	}
	return "", nil
}

func (h *handler) listInboxes(w http.ResponseWriter, r *http.Request) error {
	k := apiKey(r)
	ms, err := h.d.Services.Inbound.Mailboxes(r.Context(), k.WorkspaceID, k.MailboxID)
	if err != nil {
		return err
	}
	out := inboxList{Object: "list", Data: make([]inboxJSON, 0, len(ms))}
	for i := range ms {
		j, err := h.inboxOut(r, &ms[i])
		if err != nil {
			return err
		}
		out.Data = append(out.Data, j)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getInbox(w http.ResponseWriter, r *http.Request) error {
	m, err := h.inbox(r)
	if err != nil {
		return err
	}
	out, err := h.inboxOut(r, m)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) updateInbox(w http.ResponseWriter, r *http.Request) error {
	var req updateInboxRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil && req.FromName == nil {
		return apierr.InvalidRequest("Give name or from_name.")
	}
	name, err := inboxName(req.Name, req.FromName)
	if err != nil {
		return err
	}
	m, err := h.inbox(r)
	if err != nil {
		return err
	}
	k := apiKey(r)
	if m, err = h.d.Services.Inbound.RenameMailbox(r.Context(), k.WorkspaceID, k.MailboxID, m.ID, name); err != nil {
		return err
	}
	out, err := h.inboxOut(r, m)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) deleteInbox(w http.ResponseWriter, r *http.Request) error {
	m, err := h.inbox(r)
	if err != nil {
		return err
	}
	k := apiKey(r)
	if err := h.d.Services.Inbound.DeleteMailbox(r.Context(), k.WorkspaceID, k.MailboxID, m.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, removedJSON{Object: "inbox", ID: m.ID, Deleted: true})
	return nil
}

// threadOutFor sums a conversation up from its messages: the newest one's
// people, read when none is unread, archive when every one is archived,
// sent when none was received.
func threadOutFor(t *inbound.Thread, ms []*inbound.Message) inboxThreadJSON {
	out := inboxThreadJSON{Object: "inbox_thread", ID: t.ID, Subject: opt(t.Subject), To: []string{}, Cc: []string{}, Bcc: []string{},
		Labels: []string{}, EmailCount: len(ms), Read: true, ReceivedAt: ts(t.LastMessageAt), Folder: "sent"}
	archived, received := len(ms) > 0, false
	for _, m := range ms {
		out.Read = out.Read && !m.Unread
		archived = archived && m.Archived
		received = received || m.Direction == inbound.DirectionReceived
		for _, p := range m.Parts {
			out.HasAttachment = out.HasAttachment || !p.Inline
		}
	}
	if n := len(ms); n > 0 {
		last := ms[n-1]
		from := last.FromAddr
		if from == "" {
			from = last.From
		}
		out.From = opt(from)
		out.To = append(out.To, last.To...)
		out.Cc = append(out.Cc, last.Cc...)
	}
	switch {
	case archived:
		out.Folder = "archive"
	case received:
		out.Folder = "inbox"
	}
	return out
}

func (h *handler) threadView(r *http.Request, rd inbound.Reader, id string) (inboxThreadJSON, error) {
	t, ms, err := h.d.Services.Inbound.Thread(r.Context(), rd, id)
	if err != nil {
		return inboxThreadJSON{}, err
	}
	return threadOutFor(t, ms), nil
}

// threadFilter reads the SDK's thread filters: read and folders hold to
// the page read; labels are refused (Mailroom has none).
func threadFilter(r *http.Request) (func(inboxThreadJSON) bool, error) {
	q := r.URL.Query()
	if q.Get("labels") != "" {
		return nil, apierr.InvalidRequest("labels are not offered: Mailroom's mailboxes have no labels.")
	}
	var folders []string
	if v := q.Get("folders"); v != "" {
		for _, f := range strings.Split(v, ",") {
			if !slices.Contains(inboxFolders, f) {
				return nil, apierr.InvalidRequest("folders has %q; write some of %s.", f, strings.Join(inboxFolders, ", "))
			}
			folders = append(folders, f)
		}
	}
	wantRead, hasRead := false, q.Get("read") != ""
	if hasRead {
		var err error
		if wantRead, err = queryFlag(r, "read"); err != nil {
			return nil, err
		}
	}
	return func(t inboxThreadJSON) bool {
		return (!hasRead || t.Read == wantRead) && (folders == nil || slices.Contains(folders, t.Folder))
	}, nil
}

func (h *handler) listInboxThreads(w http.ResponseWriter, r *http.Request) error {
	rd, err := h.inboxReader(r)
	if err != nil {
		return err
	}
	keep, err := threadFilter(r)
	if err != nil {
		return err
	}
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	var before *inbound.Position
	if pg.After != nil {
		before = &inbound.Position{At: pg.After.At, ID: pg.After.ID}
	}
	threads, err := h.d.Services.Inbound.Threads(r.Context(), rd, before, pg.Limit+1)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(threads), func(i int) Cursor {
		return Cursor{At: threads[i].LastMessageAt.UnixMilli(), ID: threads[i].ID}
	})
	out := inboxThreadList{Object: "list", HasMore: meta.HasMore, Data: make([]inboxThreadJSON, 0, n)}
	for i := range threads[:n] {
		t, err := h.threadView(r, rd, threads[i].ID)
		if err != nil {
			return err
		}
		if keep(t) {
			out.Data = append(out.Data, t)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// searchInboxThreads answers the threads of the inbox's messages that hold
// every word of query (GET /v1/search), best first, each with the first
// message that matched.
func (h *handler) searchInboxThreads(w http.ResponseWriter, r *http.Request) error {
	rd, err := h.inboxReader(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	for _, f := range []string{"from", "to", "cc", "bcc", "has_attachment", "start_date", "end_date"} {
		if q.Get(f) != "" {
			return apierr.InvalidRequest("%s is not offered on a thread search; put the words in query (it searches names and addresses too).", f)
		}
	}
	if strings.TrimSpace(q.Get("query")) == "" {
		return apierr.InvalidRequest("query is required: the words to look for.")
	}
	keep, err := threadFilter(r)
	if err != nil {
		return err
	}
	pg, err := h.pager.page(r, 20, 50, false)
	if err != nil {
		return err
	}
	hits, err := h.d.Services.Inbound.Search(r.Context(), rd, q.Get("query"), pg.Limit)
	if err != nil {
		return err
	}
	out := inboxThreadList{Object: "list", Data: []inboxThreadJSON{}}
	seen := map[string]bool{}
	for _, hit := range hits {
		if seen[hit.ThreadID] {
			continue
		}
		seen[hit.ThreadID] = true
		t, err := h.threadView(r, rd, hit.ThreadID)
		if err != nil {
			return err
		}
		t.MatchedEmailID = &hit.MessageID
		if keep(t) {
			out.Data = append(out.Data, t)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getInboxThread(w http.ResponseWriter, r *http.Request) error {
	rd, err := h.inboxReader(r)
	if err != nil {
		return err
	}
	t, err := h.threadView(r, rd, r.PathValue("thread"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// updateInboxThread marks every message of the thread read or unread, and
// moves it to archive or back to inbox (the archived flag).
func (h *handler) updateInboxThread(w http.ResponseWriter, r *http.Request) error {
	var req updateThreadRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Read == nil && req.Folder == nil {
		return apierr.InvalidRequest("Give read or folder.")
	}
	var archived, unread *bool
	if req.Folder != nil {
		switch *req.Folder {
		case "inbox", "archive":
			a := *req.Folder == "archive"
			archived = &a
		case "spam", "trash":
			return apierr.Invalid422("unsupported_folder", "Mailroom keeps no %s folder: a thread is in inbox or archive.", *req.Folder).
				WithNext("Archive it (folder: archive), or remove it with DELETE.")
		default:
			return apierr.InvalidRequest("folder must be inbox, archive, spam or trash.")
		}
	}
	if req.Read != nil {
		u := !*req.Read
		unread = &u
	}
	rd, err := h.inboxReader(r)
	if err != nil {
		return err
	}
	if err := h.d.Services.Inbound.SetThreadFlags(r.Context(), rd, r.PathValue("thread"), archived, unread); err != nil {
		return err
	}
	t, err := h.threadView(r, rd, r.PathValue("thread"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (h *handler) deleteInboxThread(w http.ResponseWriter, r *http.Request) error {
	rd, err := h.inboxReader(r)
	if err != nil {
		return err
	}
	id := r.PathValue("thread")
	if err := h.d.Services.Inbound.DeleteThread(r.Context(), rd, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, removedJSON{Object: "inbox_thread", ID: id, Deleted: true})
	return nil
}

func inboxMessageOut(m *inbound.Message) inboxMessageJSON {
	out := inboxMessageJSON{ID: m.ID, ThreadID: m.ThreadID, Direction: "inbound", From: m.From, To: m.To, Cc: m.Cc, Bcc: []string{}, ReplyTo: []string{},
		Subject: opt(m.Subject), MessageID: opt(m.MessageID), HTML: m.HTML, Text: m.Text, Attachments: []inboxAttachmentJSON{},
		Read: !m.Unread, ReceivedAt: ts(m.ReceivedAt)}
	if m.Direction == inbound.DirectionSent {
		out.Direction = "outbound"
	}
	if m.FromAddr != "" {
		out.From = m.FromAddr
	}
	if out.To == nil {
		out.To = []string{}
	}
	if out.Cc == nil {
		out.Cc = []string{}
	}
	if rt := m.Headers["Reply-To"]; rt != "" {
		out.ReplyTo = []string{rt}
	}
	for _, p := range m.Parts {
		if !p.Inline {
			out.Attachments = append(out.Attachments, inboxAttachmentJSON{ID: p.Filename, Filename: p.Filename, Size: p.Size})
		}
	}
	return out
}

func (h *handler) listInboxThreadEmails(w http.ResponseWriter, r *http.Request) error {
	rd, err := h.inboxReader(r)
	if err != nil {
		return err
	}
	_, ms, err := h.d.Services.Inbound.Thread(r.Context(), rd, r.PathValue("thread"))
	if err != nil {
		return err
	}
	out := inboxMessageList{Object: "list", Data: make([]inboxMessageJSON, 0, len(ms))}
	for _, m := range ms {
		out.Data = append(out.Data, inboxMessageOut(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// threadMessage checks that the path's email is a message of the path's
// thread in the inbox, and answers the reader for it.
func (h *handler) threadMessage(r *http.Request) (inbound.Reader, error) {
	rd, err := h.inboxReader(r)
	if err != nil {
		return rd, err
	}
	_, ms, err := h.d.Services.Inbound.Thread(r.Context(), rd, r.PathValue("thread"))
	if err != nil {
		return rd, err
	}
	for _, m := range ms {
		if m.ID == r.PathValue("email") {
			return rd, nil
		}
	}
	return rd, apierr.NotFound("message")
}

func (h *handler) getInboxThreadEmail(w http.ResponseWriter, r *http.Request) error {
	rd, err := h.threadMessage(r)
	if err != nil {
		return err
	}
	m, err := h.d.Services.Inbound.Message(r.Context(), rd, r.PathValue("email")) // marks it read
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, inboxMessageOut(m))
	return nil
}

// sdkBody is the written body of a reply or forward: Mailroom writes it as
// text (markdown), so html alone is refused rather than sent as source.
func sdkBody(text, html *string) (string, error) {
	if text != nil && strings.TrimSpace(*text) != "" {
		return *text, nil
	}
	if html != nil && strings.TrimSpace(*html) != "" {
		return "", apierr.InvalidRequest("Give text: Mailroom writes replies and forwards as text (markdown), and renders the html itself.")
	}
	return "", nil
}

func sdkAttachments(in []sdkAttachment) ([]inbound.ComposeAttachment, error) {
	out := make([]inbound.ComposeAttachment, 0, len(in))
	for i, a := range in {
		if a.Path != nil {
			return nil, apierr.InvalidRequest("attachments[%d].path is not offered here; send the file as content (base64).", i)
		}
		if a.Filename == nil || a.Content == nil {
			return nil, apierr.InvalidRequest("attachments[%d] needs filename and content (base64).", i)
		}
		c := inbound.ComposeAttachment{Filename: *a.Filename, ContentBase64: *a.Content}
		if a.ContentType != nil {
			c.ContentType = *a.ContentType
		}
		out = append(out, c)
	}
	return out, nil
}

func writeInboxSent(w http.ResponseWriter, s *inbound.Sent) {
	out := inboxSentJSON{ID: s.EmailID, Status: s.Status}
	if s.MessageID != "" {
		out.MessageID, out.ThreadID = &s.MessageID, &s.ThreadID
	}
	writeJSON(w, sentStatus(s), out)
}

func (h *handler) replyInboxThreadEmail(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, maxSendBody)
	if err != nil {
		return err
	}
	var req inboxReplyRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if len(req.Bcc) > 0 || len(req.Headers) > 0 {
		return apierr.InvalidRequest("bcc and headers are not offered on a reply.")
	}
	text, err := sdkBody(req.Text, req.HTML)
	if err != nil {
		return err
	}
	atts, err := sdkAttachments(req.Attachments)
	if err != nil {
		return err
	}
	rd, err := h.threadMessage(r)
	if err != nil {
		return err
	}
	var sent *inbound.Sent
	if req.ReplyAll != nil && *req.ReplyAll {
		if len(req.Cc) > 0 || req.Subject != nil {
			return apierr.InvalidRequest("reply_all chooses the recipients and subject itself; leave out cc and subject.")
		}
		sent, err = h.d.Services.Inbound.ReplyAll(r.Context(), rd, caller(r), r.PathValue("email"), text, atts, nil)
	} else {
		c := inbound.Compose{Cc: req.Cc, Body: text, Attachments: atts}
		if req.Subject != nil {
			c.Subject = *req.Subject
		}
		sent, err = h.d.Services.Inbound.Reply(r.Context(), rd, caller(r), r.PathValue("email"), c)
	}
	if err != nil {
		return err
	}
	writeInboxSent(w, sent)
	return nil
}

// forwardInboxThreadEmail forwards inline (the original quoted under the
// text), as POST /v1/messages/{id}/forward does by default.
func (h *handler) forwardInboxThreadEmail(w http.ResponseWriter, r *http.Request) error {
	var req inboxForwardRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	switch {
	case len(req.Cc) > 0 || len(req.Bcc) > 0 || len(req.Headers) > 0 || len(req.Attachments) > 0:
		return apierr.InvalidRequest("cc, bcc, headers and attachments are not offered on a forward; give to and text.")
	case req.Subject != nil:
		return apierr.InvalidRequest("subject is not offered on a forward: it is \"Fwd: \" and the original's.")
	}
	text, err := sdkBody(req.Text, req.HTML)
	if err != nil {
		return err
	}
	rd, err := h.threadMessage(r)
	if err != nil {
		return err
	}
	sent, err := h.d.Services.Inbound.Forward(r.Context(), rd, caller(r), r.PathValue("email"), req.To, text, inbound.ForwardInline)
	if err != nil {
		return err
	}
	writeInboxSent(w, sent)
	return nil
}
