package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
)

// A sent email's attachments in the Resend SDKs' shapes
// (emails.attachments.*), read from the email's stored body. An
// attachment's id is att_<n>, its place in the send (filenames may
// repeat); its bytes are at download_url, with the key.

type sentAttachmentJSON struct {
	Object             string `json:"object,omitempty"` // attachment, on the single read
	ID                 string `json:"id"`
	Filename           string `json:"filename"`
	Size               int    `json:"size"`
	ContentType        string `json:"content_type"`
	ContentDisposition string `json:"content_disposition"` // inline when it has a content_id
	ContentID          string `json:"content_id,omitempty"`
	DownloadURL        string `json:"download_url"`
}

type sentAttachmentList struct {
	Object  string               `json:"object"`
	HasMore bool                 `json:"has_more"`
	Data    []sentAttachmentJSON `json:"data"`
}

func (h *handler) sentAttachmentOut(emailID string, i int, a sending.StoredAttachment) sentAttachmentJSON {
	id := "att_" + strconv.Itoa(i+1)
	disp := "attachment"
	if a.ContentID != "" {
		disp = "inline"
	}
	ct := a.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	return sentAttachmentJSON{ID: id, Filename: a.Filename, Size: len(a.Content), ContentType: ct, ContentDisposition: disp,
		ContentID: a.ContentID, DownloadURL: h.d.PublicURL + "/v1/emails/sent/" + emailID + "/attachments/" + id + "/content"}
}

// sentAttachment finds the attachment {attachment} of email {id}.
func (h *handler) sentAttachment(r *http.Request) (int, sending.StoredAttachment, error) {
	atts, err := h.d.Services.Sending.Attachments(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		return 0, sending.StoredAttachment{}, err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(r.PathValue("attachment"), "att_"))
	if err != nil || !strings.HasPrefix(r.PathValue("attachment"), "att_") || n < 1 || n > len(atts) {
		return 0, sending.StoredAttachment{}, apierr.NotFound("attachment").WithNext("List the email's attachments with GET /v1/emails/{id}/attachments.")
	}
	return n - 1, atts[n-1], nil
}

func (h *handler) listSentAttachments(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	atts, err := h.d.Services.Sending.Attachments(r.Context(), caller(r), id)
	if err != nil {
		return err
	}
	out := sentAttachmentList{Object: "list", Data: make([]sentAttachmentJSON, 0, len(atts))}
	for i, a := range atts {
		out.Data = append(out.Data, h.sentAttachmentOut(id, i, a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getSentAttachment(w http.ResponseWriter, r *http.Request) error {
	i, a, err := h.sentAttachment(r)
	if err != nil {
		return err
	}
	out := h.sentAttachmentOut(r.PathValue("id"), i, a)
	out.Object = "attachment"
	writeJSON(w, http.StatusOK, out)
	return nil
}

// downloadSentAttachment answers the bytes as sent, never rendered here.
func (h *handler) downloadSentAttachment(w http.ResponseWriter, r *http.Request) error {
	i, a, err := h.sentAttachment(r)
	if err != nil {
		return err
	}
	out := h.sentAttachmentOut(r.PathValue("id"), i, a)
	w.Header().Set("Content-Type", out.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(a.Content)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.Content)
	return nil
}
