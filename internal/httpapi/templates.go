package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/templates"
)

type createTemplateRequest struct {
	Description *string           `json:"description"`
	HTML        *string           `json:"html"`
	Name        *string           `json:"name"` // required
	Publish     *bool             `json:"publish"`
	Slug        *string           `json:"slug"`
	Subject     *string           `json:"subject"`
	Text        *string           `json:"text"`
	Variables   []json.RawMessage `json:"variables"` // string or {name, default?, required?}
}

type updateTemplateRequest struct {
	Description *string `json:"description"`
	Name        *string `json:"name"`
	Slug        *string `json:"slug"`
}

type createVersionRequest struct {
	HTML      *string           `json:"html"`
	Subject   *string           `json:"subject"`
	Text      *string           `json:"text"`
	Variables []json.RawMessage `json:"variables"`
}

type publishTemplateRequest struct {
	Version   *int    `json:"version"`
	VersionID *string `json:"version_id"`
}

type renderTemplateRequest struct {
	Preheader *string        `json:"preheader"`
	Variables map[string]any `json:"variables"`
}

type previewTemplateRequest struct {
	Preheader *string        `json:"preheader"`
	Variables map[string]any `json:"variables"`
	VersionID *string        `json:"version_id"`
}

type templateJSON struct {
	CreatedAt          string        `json:"created_at"`
	Description        string        `json:"description"`
	ID                 string        `json:"id"`
	LatestVersion      int           `json:"latest_version"`
	Name               string        `json:"name"`
	PublishedVersionID *string       `json:"published_version_id"`
	Sendable           bool          `json:"sendable"`
	Slug               string        `json:"slug"`
	UpdatedAt          string        `json:"updated_at"`
	Versions           []versionJSON `json:"versions,omitempty"`
}

type versionJSON struct {
	CreatedAt  string         `json:"created_at"`
	HTML       string         `json:"html"`
	ID         string         `json:"id"`
	Published  bool           `json:"published"`
	Subject    string         `json:"subject"`
	TemplateID string         `json:"template_id"`
	Text       string         `json:"text"`
	Variables  []variableJSON `json:"variables"`
	Version    int            `json:"version"`
}

type variableJSON struct {
	Default  *string `json:"default,omitempty"`
	Name     string  `json:"name"`
	Required bool    `json:"required"`
}

type templateList struct {
	HasMore    bool           `json:"has_more"`
	NextCursor *string        `json:"next_cursor"`
	Templates  []templateJSON `json:"templates"`
}

type versionList struct {
	PublishedVersionID *string       `json:"published_version_id"`
	Versions           []versionJSON `json:"versions"`
	listMeta
}

type publishedJSON struct {
	PublishedVersionID string `json:"published_version_id"`
}

type renderedJSON struct {
	HTML      string `json:"html"`
	Preheader string `json:"preheader"`
	Subject   string `json:"subject"`
	Text      string `json:"text"`
	Version   int    `json:"version"`
}

type previewJSON struct {
	FilledWithSamples []string       `json:"filled_with_samples"`
	HTML              string         `json:"html"`
	Preheader         string         `json:"preheader"`
	Subject           string         `json:"subject"`
	Text              string         `json:"text"`
	Values            map[string]any `json:"values"`
	Version           int            `json:"version"`
	Warnings          []string       `json:"warnings"`
}

func templateOut(t templates.Template) templateJSON {
	out := templateJSON{ID: t.ID, Name: t.Name, Slug: t.Slug, Description: t.Description, LatestVersion: t.LatestVersion,
		Sendable: t.Sendable(), CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
	if t.PublishedVersionID != "" {
		id := t.PublishedVersionID
		out.PublishedVersionID = &id
	}
	if t.Versions != nil {
		out.Versions = make([]versionJSON, 0, len(t.Versions))
		for _, v := range t.Versions {
			out.Versions = append(out.Versions, versionOut(v, t.PublishedVersionID))
		}
	}
	return out
}

func versionOut(v templates.Version, published string) versionJSON {
	out := versionJSON{ID: v.ID, TemplateID: v.TemplateID, Version: v.Version, Subject: v.Subject, HTML: v.HTML, Text: v.Text,
		Published: v.ID == published, CreatedAt: ts(v.CreatedAt), Variables: make([]variableJSON, 0, len(v.Variables))}
	for _, x := range v.Variables {
		out.Variables = append(out.Variables, variableJSON{Name: x.Name, Default: x.Default, Required: x.Required})
	}
	return out
}

// parseVariables reads declared variables: a bare string is a required
// variable without a default; an object is { name, default?, required? }
// with required defaulting to true unless a default is given.
func parseVariables(raws []json.RawMessage) ([]templates.Variable, error) {
	out := make([]templates.Variable, 0, len(raws))
	for i, raw := range raws {
		var name string
		if json.Unmarshal(raw, &name) == nil {
			out = append(out, templates.Variable{Name: name, Required: true})
			continue
		}
		if v, ok, err := resendVariable(raw, i); ok || err != nil {
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		var obj struct {
			Name     *string `json:"name"`
			Default  *string `json:"default"`
			Required *bool   `json:"required"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if dec.Decode(&obj) != nil || obj.Name == nil {
			return nil, apierr.InvalidRequest("variables[%d] must be a name, { \"name\": string, \"default\"?: string, \"required\"?: boolean } or Resend's { \"key\": string, \"type\": \"string\" | \"number\", \"fallback_value\"?: string | number }.", i)
		}
		v := templates.Variable{Name: *obj.Name, Default: obj.Default, Required: obj.Default == nil}
		if obj.Required != nil {
			v.Required = *obj.Required
		}
		out = append(out, v)
	}
	return out, nil
}

// resendVariable reads Resend's { key, type, fallback_value } (ok false
// when raw has no key): the fallback is the default, and a variable
// without one is required, as Resend renders it.
func resendVariable(raw json.RawMessage, i int) (templates.Variable, bool, error) {
	var obj struct {
		Key           *string         `json:"key"`
		Type          *string         `json:"type"`
		FallbackValue json.RawMessage `json:"fallback_value"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&obj) != nil || obj.Key == nil {
		return templates.Variable{}, false, nil
	}
	bad := apierr.InvalidRequest("variables[%d]: type must be string or number, and fallback_value of that type.", i)
	if obj.Type == nil || (*obj.Type != "string" && *obj.Type != "number") {
		return templates.Variable{}, true, bad
	}
	v := templates.Variable{Name: *obj.Key, Required: true}
	if fb := bytes.TrimSpace(obj.FallbackValue); len(fb) > 0 && string(fb) != "null" {
		var sv string
		var nv json.Number
		switch {
		case *obj.Type == "string" && json.Unmarshal(fb, &sv) == nil:
		case *obj.Type == "number" && json.Unmarshal(fb, &nv) == nil && fb[0] != '"':
			sv = nv.String()
		default:
			return templates.Variable{}, true, bad
		}
		v.Default, v.Required = &sv, false
	}
	return v, true, nil
}

// decodeOptional is decodeRequest for routes whose body may be left out.
func decodeOptional(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeJSON(body, dst)
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (h *handler) listTemplates(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	list, err := h.d.Services.Templates.List(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := make([]templateJSON, 0, len(list))
	for _, t := range list {
		out = append(out, templateOut(t))
	}
	writeJSON(w, http.StatusOK, templateList{Templates: out})
	return nil
}

func (h *handler) createTemplate(w http.ResponseWriter, r *http.Request) error {
	var req createTemplateRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return apierr.InvalidRequest("name is required.")
	}
	vars, err := parseVariables(req.Variables)
	if err != nil {
		return err
	}
	in := templates.CreateInput{Name: *req.Name, Slug: str(req.Slug), Description: str(req.Description),
		Content: templates.Content{Subject: str(req.Subject), HTML: str(req.HTML), Text: str(req.Text), Variables: vars},
		Publish: req.Publish != nil && *req.Publish}
	if req.Slug != nil && *req.Slug == "" {
		return apierr.InvalidRequest("slug cannot be empty; omit it to derive it from the name.")
	}
	t, err := h.d.Services.Templates.Create(r.Context(), apiKey(r).WorkspaceID, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, templateOut(t))
	return nil
}

func (h *handler) getTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := h.d.Services.Templates.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, templateOut(t))
	return nil
}

func (h *handler) updateTemplate(w http.ResponseWriter, r *http.Request) error {
	var req updateTemplateRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	t, err := h.d.Services.Templates.Update(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), req.Name, req.Slug, req.Description)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, templateOut(t))
	return nil
}

func (h *handler) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := h.d.Services.Templates.Delete(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

func (h *handler) listTemplateVersions(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	t, vs, err := h.d.Services.Templates.Versions(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := versionList{Versions: make([]versionJSON, 0, len(vs))}
	for _, v := range vs {
		out.Versions = append(out.Versions, versionOut(v, t.PublishedVersionID))
	}
	if t.PublishedVersionID != "" {
		out.PublishedVersionID = &t.PublishedVersionID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) createTemplateVersion(w http.ResponseWriter, r *http.Request) error {
	var req createVersionRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	vars, err := parseVariables(req.Variables)
	if err != nil {
		return err
	}
	v, err := h.d.Services.Templates.AddVersion(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"),
		templates.Content{Subject: str(req.Subject), HTML: str(req.HTML), Text: str(req.Text), Variables: vars})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, versionOut(v, ""))
	return nil
}

func (h *handler) publishTemplate(w http.ResponseWriter, r *http.Request) error {
	var req publishTemplateRequest
	if err := decodeOptional(w, r, &req); err != nil {
		return err
	}
	if req.VersionID != nil && req.Version != nil {
		return apierr.InvalidRequest("Give version_id or version, not both (neither publishes the latest).")
	}
	pub, err := h.d.Services.Templates.Publish(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), str(req.VersionID), req.Version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, publishedJSON{PublishedVersionID: pub})
	return nil
}

func (h *handler) renderTemplate(w http.ResponseWriter, r *http.Request) error {
	var req renderTemplateRequest
	if err := decodeOptional(w, r, &req); err != nil {
		return err
	}
	out, err := h.d.Services.Templates.Render(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), req.Variables, str(req.Preheader))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderedJSON{Subject: out.Subject, HTML: out.HTML, Text: out.Text, Preheader: out.Preheader, Version: out.Version})
	return nil
}

func (h *handler) previewTemplate(w http.ResponseWriter, r *http.Request) error {
	var req previewTemplateRequest
	if err := decodeOptional(w, r, &req); err != nil {
		return err
	}
	p, err := h.d.Services.Templates.Preview(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), str(req.VersionID), req.Variables, str(req.Preheader))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, previewJSON{Subject: p.Subject, HTML: p.HTML, Text: p.Text, Preheader: p.Preheader, Version: p.Version,
		Values: p.Values, FilledWithSamples: p.FilledWithSamples, Warnings: p.Warnings})
	return nil
}

// duplicateTemplate copies a template as a new draft (the Resend SDKs'
// templates.duplicate).
func (h *handler) duplicateTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := h.d.Services.Templates.Duplicate(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, copiedJSON{Object: "template", ID: t.ID, Name: t.Name})
	return nil
}
