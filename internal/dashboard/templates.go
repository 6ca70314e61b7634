package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/templates"
)

// Templates: the list, a template's editor (its meta and a new version,
// published or not), its versions, and a preview rendered by the one
// template renderer in a sandboxed frame. Saving calls what PATCH
// /v1/templates/{id}, POST .../versions and POST .../publish call.

func (x *Dashboard) templates(w http.ResponseWriter, r *http.Request, s *session) error {
	ts, err := x.d.Templates.List(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "templates", ts)
	return nil
}

// templateForm is the editor's fields, as stored or as submitted.
type templateForm struct {
	Name, Slug, Description string
	Subject, HTML, Text     string
	Variables               string // one a line: name, or name=default
	Publish                 bool
}

type templateView struct {
	New      bool
	Template templates.Template
	Versions []templates.Version
	Editing  int // the version the editor started from
	Form     templateForm
	Preview  *templates.Preview // the stored version's, when it renders
	Error    string             // a refused save, in words
}

// variablesText writes declared variables as the form shows them.
func variablesText(vs []templates.Variable) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.Name)
		if v.Default != nil {
			b.WriteString("=" + *v.Default)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// parseVariables reads the form's variables: "name" is required with no
// default, "name=default" has a default (as { name, default } on /v1).
func parseVariables(text string) []templates.Variable {
	var out []templates.Variable
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, def, ok := strings.Cut(line, "=")
		v := templates.Variable{Name: strings.TrimSpace(name), Required: !ok}
		if ok {
			d := strings.TrimSpace(def)
			v.Default = &d
		}
		out = append(out, v)
	}
	return out
}

func formOf(r *http.Request) templateForm {
	f := r.PostForm
	return templateForm{Name: f.Get("name"), Slug: strings.TrimSpace(f.Get("slug")), Description: f.Get("description"),
		Subject: f.Get("subject"), HTML: f.Get("html"), Text: f.Get("text"), Variables: f.Get("variables"), Publish: f.Get("publish") == "on"}
}

func (f templateForm) content() templates.Content {
	return templates.Content{Subject: f.Subject, HTML: f.HTML, Text: f.Text, Variables: parseVariables(f.Variables)}
}

func (x *Dashboard) newTemplate(w http.ResponseWriter, r *http.Request, s *session) error {
	x.render(w, r, s, http.StatusOK, "template", templateView{New: true})
	return nil
}

// createTemplate is POST /v1/templates from the form; a refused one comes
// back with what was typed and why.
func (x *Dashboard) createTemplate(w http.ResponseWriter, r *http.Request, s *session) error {
	f := formOf(r)
	t, err := x.d.Templates.Create(r.Context(), s.key.WorkspaceID, templates.CreateInput{Name: f.Name, Slug: f.Slug,
		Description: f.Description, Content: f.content(), Publish: f.Publish})
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		x.render(w, r, s, e.Status, "template", templateView{New: true, Form: f, Error: e.Message})
		return nil
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/templates/"+url.PathEscape(t.ID)+"?ok=template")
}

// template shows the editor filled with a version (?version=N, else the
// latest), the versions, and the stored version's preview.
func (x *Dashboard) template(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showTemplate(w, r, s, http.StatusOK, nil, "")
}

func (x *Dashboard) showTemplate(w http.ResponseWriter, r *http.Request, s *session, status int, f *templateForm, problem string) error {
	t, vs, err := x.d.Templates.Versions(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := templateView{Template: t, Versions: vs, Error: problem}
	var from *templates.Version
	want := r.URL.Query().Get("version")
	for i := range vs { // newest first
		if want == "" || want == strconv.Itoa(vs[i].Version) {
			from = &vs[i]
			break
		}
	}
	if from == nil && want != "" {
		return errNotFound("template version")
	}
	if from != nil {
		v.Editing = from.Version
		v.Form = templateForm{Subject: from.Subject, HTML: from.HTML, Text: from.Text, Variables: variablesText(from.Variables)}
		if p, err := x.d.Templates.Preview(r.Context(), s.key.WorkspaceID, t.ID, from.ID, nil, ""); err == nil {
			v.Preview = &p
		}
	}
	v.Form.Name, v.Form.Slug, v.Form.Description = t.Name, t.Slug, t.Description
	if f != nil {
		v.Form = *f
	}
	x.render(w, r, s, status, "template", v)
	return nil
}

// saveTemplate saves the editor: the name, slug and description when they
// changed (PATCH /v1/templates/{id}), the content as a new version when it
// differs from the latest (POST .../versions), and publishes the latest
// version when asked (POST .../publish).
func (x *Dashboard) saveTemplate(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx, wsID, f := r.Context(), s.key.WorkspaceID, formOf(r)
	t, vs, err := x.d.Templates.Versions(ctx, wsID, r.PathValue("id"))
	if err != nil {
		return err
	}
	refused := func(err error) error {
		if e, ok := apierr.As(err); ok && e.Status < 500 {
			return x.showTemplate(w, r, s, e.Status, &f, e.Message)
		}
		return err
	}
	if f.Name != t.Name || f.Slug != t.Slug || f.Description != t.Description {
		slug := &f.Slug
		if f.Slug == "" {
			slug = nil // empty keeps the slug, as leaving it out of the PATCH does
		}
		if _, err := x.d.Templates.Update(ctx, wsID, t.ID, &f.Name, slug, &f.Description); err != nil {
			return refused(err)
		}
	}
	c := f.content()
	if len(vs) == 0 || c.Subject != vs[0].Subject || c.HTML != vs[0].HTML || c.Text != vs[0].Text || variablesText(c.Variables) != variablesText(vs[0].Variables) {
		if _, err := x.d.Templates.AddVersion(ctx, wsID, t.ID, c); err != nil {
			return refused(err)
		}
	}
	ok := "template"
	if f.Publish {
		if _, err := x.d.Templates.Publish(ctx, wsID, t.ID, "", nil); err != nil {
			return refused(err)
		}
		ok = "published"
	}
	return redirect(w, r, "/templates/"+url.PathEscape(t.ID)+"?ok="+ok)
}

// publishTemplate publishes one version (POST /v1/templates/{id}/publish
// with version_id).
func (x *Dashboard) publishTemplate(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := x.d.Templates.Publish(r.Context(), s.key.WorkspaceID, r.PathValue("id"), r.PostForm.Get("version_id"), nil); err != nil {
		return err
	}
	return redirect(w, r, "/templates/"+url.PathEscape(r.PathValue("id"))+"?ok=published")
}

// templatePreview is a stored version's preview (?version_id=, else the
// published one, else the latest) for its sandboxed iframe.
func (x *Dashboard) templatePreview(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := x.d.Templates.Preview(r.Context(), s.key.WorkspaceID, r.PathValue("id"), r.URL.Query().Get("version_id"), nil, "")
	if err != nil {
		return err
	}
	serveBody(w, r, p.HTML, p.Text)
	return nil
}

// draftPreview renders the editor's fields as typed, saving nothing: the
// editor's Preview button (and, with the script, each pause in typing)
// posts the form into the preview's frame. A template that does not render
// answers why, as text, in the frame.
func (x *Dashboard) draftPreview(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := x.d.Templates.PreviewContent(formOf(r).content(), nil, "")
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		serveBody(w, r, "", "The preview cannot be shown: "+e.Message)
		return nil
	}
	if err != nil {
		return err
	}
	serveBody(w, r, p.HTML, "Subject: "+p.Subject+"\n\n"+p.Text)
	return nil
}
