package dashboard

import (
	"net/http"

	"mailroom/internal/templates"
)

func (x *Dashboard) templates(w http.ResponseWriter, r *http.Request, s *session) error {
	ts, err := x.d.Templates.List(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "templates", ts)
	return nil
}

type templateView struct {
	Template templates.Template
	Versions []templates.Version
	Preview  templates.Preview
}

// template shows a template's versions and a preview of the published one
// (else the latest), variables filled with samples.
func (x *Dashboard) template(w http.ResponseWriter, r *http.Request, s *session) error {
	t, vs, err := x.d.Templates.Versions(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	p, err := x.d.Templates.Preview(r.Context(), s.key.WorkspaceID, t.ID, "", nil, "")
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "template", templateView{Template: t, Versions: vs, Preview: p})
	return nil
}

// templatePreview is the preview's HTML, for its sandboxed iframe.
func (x *Dashboard) templatePreview(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := x.d.Templates.Preview(r.Context(), s.key.WorkspaceID, r.PathValue("id"), "", nil, "")
	if err != nil {
		return err
	}
	serveBody(w, r, p.HTML, p.Text)
	return nil
}
