package httpapi

import (
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/capture"
)

// capturedJSON is one captured message in a list (`mailroom dev`,
// MAILROOM_OUTBOUND=capture): what would have gone out, and to whom.
type capturedJSON struct {
	Object    string   `json:"object"` // "captured_email"
	ID        string   `json:"id"`
	EmailID   string   `json:"email_id"`
	From      string   `json:"from"` // the return path (MAIL FROM)
	To        []string `json:"to"`   // the envelope's recipients, Bcc included
	Subject   string   `json:"subject"`
	Size      int      `json:"size"`
	CreatedAt string   `json:"created_at"`
}

// capturedFullJSON adds the views: html and text parts (null when
// absent), the headers (lowercased names) and the raw message as it would
// have gone out, signed.
type capturedFullJSON struct {
	capturedJSON
	HTML    *string           `json:"html"`
	Text    *string           `json:"text"`
	Headers map[string]string `json:"headers"`
	Raw     string            `json:"raw"`
}

type capturedList struct {
	Object string         `json:"object"` // "list"
	Data   []capturedJSON `json:"data"`
	listMeta
}

func capturedOut(m *capture.Message) capturedJSON {
	to := m.To
	if to == nil {
		to = []string{}
	}
	return capturedJSON{Object: "captured_email", ID: m.ID, EmailID: m.EmailID, From: m.From, To: to, Subject: m.Subject, Size: m.Size, CreatedAt: ts(m.CreatedAt)}
}

// errNotCapturing answers the captured-mail routes of a node that sends.
func errNotCapturing() error {
	return apierr.NotFound("captured email").WithNext("This node sends mail; only MAILROOM_OUTBOUND=capture (mailroom dev) captures it.")
}

func (h *handler) listCapturedEmails(w http.ResponseWriter, r *http.Request) error {
	c := h.d.Services.Capture
	if c == nil {
		return errNotCapturing()
	}
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	after := ""
	if pg.After != nil {
		after = pg.After.ID
	}
	rows, err := c.List(r.Context(), apiKey(r).WorkspaceID, pg.Limit+1, after)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(rows), func(i int) Cursor { return Cursor{At: rows[i].CreatedAt.UnixMilli(), ID: rows[i].ID} })
	out := capturedList{Object: "list", Data: make([]capturedJSON, 0, n), listMeta: meta}
	for i := range rows[:n] {
		out.Data = append(out.Data, capturedOut(&rows[i]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// capturedEmail reads the path's captured message (404 on a node that sends).
func (h *handler) capturedEmail(r *http.Request) (*capture.Shown, error) {
	c := h.d.Services.Capture
	if c == nil {
		return nil, errNotCapturing()
	}
	return c.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
}

func (h *handler) getCapturedEmail(w http.ResponseWriter, r *http.Request) error {
	m, err := h.capturedEmail(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, capturedFullJSON{capturedJSON: capturedOut(&m.Message), HTML: m.HTML, Text: m.Text, Headers: m.Headers, Raw: string(m.Raw)})
	return nil
}

// getCapturedRaw answers the exact bytes, as a download.
func (h *handler) getCapturedRaw(w http.ResponseWriter, r *http.Request) error {
	m, err := h.capturedEmail(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Disposition", `attachment; filename="`+m.ID+`.eml"`)
	_, _ = w.Write(m.Raw)
	return nil
}
