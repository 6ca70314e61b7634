package dashboard

import (
	"maps"
	"net/http"
	"slices"

	"mailroom/internal/apierr"
	"mailroom/internal/capture"
)

// Captured mail (MAILROOM_OUTBOUND=capture, mailroom dev): the list, and
// one message with its html, text, headers and raw views, as
// GET /v1/captured-emails reads them. A node that sends answers 404.

// capturedView is one captured message's page; View is the tab shown.
type capturedView struct {
	Message *capture.Shown
	View    string // html, text, headers or raw
	Headers []header
	Text    string // the text part, when shown
	Raw     string
}

func (x *Dashboard) capturing() error {
	if x.d.Capture == nil {
		return apierr.NotFound("captured email")
	}
	return nil
}

func (x *Dashboard) capturedList(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.capturing(); err != nil {
		return err
	}
	ms, err := x.d.Capture.List(r.Context(), s.key.WorkspaceID, pageRows, "")
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "captured", ms)
	return nil
}

func (x *Dashboard) capturedMessage(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.capturing(); err != nil {
		return err
	}
	m, err := x.d.Capture.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := capturedView{Message: m, View: r.URL.Query().Get("view")}
	switch v.View {
	case "text", "headers", "raw":
	default:
		v.View = "html"
		if m.HTML == nil {
			v.View = "text"
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		v.Headers = append(v.Headers, header{k, m.Headers[k]})
	}
	if v.View == "text" && m.Text != nil {
		v.Text = *m.Text
	}
	if v.View == "raw" {
		v.Raw = string(m.Raw)
	}
	x.render(w, r, s, http.StatusOK, "capturedmessage", v)
	return nil
}

// capturedBody is the message iframe's document (serveBody's sandbox).
func (x *Dashboard) capturedBody(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.capturing(); err != nil {
		return err
	}
	m, err := x.d.Capture.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	var html, text string
	if m.HTML != nil {
		html = *m.HTML
	}
	if m.Text != nil {
		text = *m.Text
	}
	serveBody(w, r, html, text)
	return nil
}
