package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/inbound"
)

// The Resend SDKs' receiving routes (/v1/emails/receiving…), read over the
// same received messages as /v1/messages, in the shapes the SDKs declare.

type receivedAttachmentJSON struct {
	Object             string  `json:"object,omitempty"`
	ID                 string  `json:"id"` // the filename, which names it under /v1/messages too
	Filename           string  `json:"filename"`
	Size               int     `json:"size"`
	ContentType        string  `json:"content_type"`
	ContentDisposition string  `json:"content_disposition"`
	ContentID          *string `json:"content_id"`
	DownloadURL        string  `json:"download_url,omitempty"`
}

type receivedEmailJSON struct {
	Object      string                   `json:"object,omitempty"`
	ID          string                   `json:"id"`
	To          []string                 `json:"to"`
	From        string                   `json:"from"`
	CreatedAt   string                   `json:"created_at"`
	Subject     string                   `json:"subject"`
	Bcc         []string                 `json:"bcc"`
	Cc          []string                 `json:"cc"`
	ReplyTo     []string                 `json:"reply_to"`
	ReceivedFor []string                 `json:"received_for"`
	MessageID   string                   `json:"message_id"`
	HTML        *string                  `json:"html,omitempty"`
	Text        *string                  `json:"text,omitempty"`
	Headers     map[string]string        `json:"headers,omitempty"`
	Raw         *receivedRawJSON         `json:"raw,omitempty"` // one message's read only
	Attachments []receivedAttachmentJSON `json:"attachments"`
}

// receivedRawJSON is where the message as it arrived is downloaded without
// a key (the SDKs' emails.receiving.forward fetches it bare), until expires_at.
type receivedRawJSON struct {
	DownloadURL string `json:"download_url"`
	ExpiresAt   string `json:"expires_at"`
}

// rawPayload is what a raw download token carries.
type rawPayload struct {
	WorkspaceID string `json:"w"`
	Expires     int64  `json:"e"` // unix milliseconds
}

const rawTokenPurpose = "received-raw"

// rawTokenTTL bounds how long a raw download link works.
const rawTokenTTL = time.Hour

type receivedList struct {
	Object  string              `json:"object"`
	HasMore bool                `json:"has_more"`
	Data    []receivedEmailJSON `json:"data"`
}

type receivedAttachmentList struct {
	Object  string                   `json:"object"`
	HasMore bool                     `json:"has_more"`
	Data    []receivedAttachmentJSON `json:"data"`
}

func (h *handler) receivedOut(m *inbound.Message, full bool) receivedEmailJSON {
	p := h.d.Services.Inbound.Payload(m)
	out := receivedEmailJSON{ID: m.ID, To: p.To, From: p.From, CreatedAt: ts(m.ReceivedAt), Subject: p.Subject,
		Bcc: []string{}, Cc: p.Cc, ReplyTo: []string{}, ReceivedFor: []string{p.Mailbox}, Attachments: receivedAttachments(p, false)}
	if p.MessageIDHeader != nil {
		out.MessageID = *p.MessageIDHeader
	}
	if full {
		out.Object, out.HTML, out.Text, out.Headers = "email", p.HTML, p.Text, p.Headers
		exp := h.d.Clock.Now().Add(rawTokenTTL)
		payload, _ := json.Marshal(rawPayload{WorkspaceID: m.WorkspaceID, Expires: exp.UnixMilli()})
		token := h.d.Box.Token(rawTokenPurpose, []byte(m.ID), payload)
		out.Raw = &receivedRawJSON{DownloadURL: h.d.Services.Inbound.RawURL(m.ID, token), ExpiresAt: ts(exp)}
	}
	return out
}

func receivedAttachments(p inbound.Payload, withURL bool) []receivedAttachmentJSON {
	out := make([]receivedAttachmentJSON, 0, len(p.Attachments))
	for _, a := range p.Attachments {
		x := receivedAttachmentJSON{ID: a.Filename, Filename: a.Filename, Size: a.Size, ContentType: a.ContentType, ContentDisposition: "attachment"}
		if withURL {
			x.Object, x.DownloadURL = "attachment", a.URL
		}
		out = append(out, x)
	}
	return out
}

// listReceived lists received messages (not the mailbox's sent copies),
// newest first.
func (h *handler) listReceived(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	f := inbound.MessageFilter{Limit: pg.Limit + 1, IncludeArchived: true}
	if pg.After != nil {
		f.Before = &inbound.Position{At: pg.After.At, ID: pg.After.ID}
	}
	ms, err := h.d.Services.Inbound.Messages(r.Context(), reader(r), f)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(ms), func(i int) Cursor { return Cursor{At: ms[i].ReceivedAt.UnixMilli(), ID: ms[i].ID} })
	out := receivedList{Object: "list", HasMore: meta.HasMore, Data: make([]receivedEmailJSON, 0, n)}
	for _, m := range ms[:n] {
		if m.Direction == inbound.DirectionReceived {
			out.Data = append(out.Data, h.receivedOut(m, false))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// receivedMessage reads one received message (marking it read, as GET
// /v1/messages/{id} does); a sent copy is not a received email.
func (h *handler) receivedMessage(r *http.Request) (*inbound.Message, error) {
	m, err := h.d.Services.Inbound.Message(r.Context(), reader(r), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if m.Direction != inbound.DirectionReceived {
		return nil, apierr.NotFound("received email")
	}
	return m, nil
}

func (h *handler) getReceived(w http.ResponseWriter, r *http.Request) error {
	m, err := h.receivedMessage(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.receivedOut(m, true))
	return nil
}

func (h *handler) listReceivedAttachments(w http.ResponseWriter, r *http.Request) error {
	m, err := h.receivedMessage(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, receivedAttachmentList{Object: "list", Data: receivedAttachments(h.d.Services.Inbound.Payload(m), true)})
	return nil
}

// getReceivedAttachment answers an attachment's metadata and its
// download_url (GET /v1/messages/{id}/attachments/{filename}, with the key).
func (h *handler) getReceivedAttachment(w http.ResponseWriter, r *http.Request) error {
	m, err := h.receivedMessage(r)
	if err != nil {
		return err
	}
	for _, a := range receivedAttachments(h.d.Services.Inbound.Payload(m), true) {
		if a.ID == r.PathValue("attachment") {
			writeJSON(w, http.StatusOK, a)
			return nil
		}
	}
	return apierr.NotFound("attachment")
}

// getReceivedRaw serves a received message as it arrived (message/rfc822)
// to the holder of the token its read answered; no key is needed.
func (h *handler) getReceivedRaw(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	payload, ok := h.d.Box.OpenToken(rawTokenPurpose, []byte(id), r.URL.Query().Get("token"))
	var p rawPayload
	if !ok || json.Unmarshal(payload, &p) != nil || p.WorkspaceID == "" {
		return apierr.NotFound("received email")
	}
	if h.d.Clock.Now().UnixMilli() > p.Expires {
		return apierr.New(http.StatusNotFound, "not_found", "This download link has expired.").
			WithNext("Read the email again (GET /v1/emails/receiving/{id}) for a new raw.download_url.")
	}
	raw, err := h.d.Services.Inbound.Raw(r.Context(), inbound.Reader{WorkspaceID: p.WorkspaceID}, id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(raw)
	return nil
}

// isRawDownload says whether r is a raw download (a signed link, no key):
// the only /v1 route beside the document that a bare request reaches.
func isRawDownload(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/emails/receiving/") && strings.HasSuffix(r.URL.Path, "/raw") &&
		r.URL.Query().Has("token")
}
