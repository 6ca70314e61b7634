package templates

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/render"
	"mailroom/internal/store"
)

// Rendered is a rendered version and which one it was.
type Rendered struct {
	TemplateID string
	VersionID  string
	Version    int
	render.Output
}

// Preview is a lenient render: the values used, the names filled with
// samples, and a warning for each.
type Preview struct {
	Rendered
	Values            map[string]any
	FilledWithSamples []string
	Warnings          []string
}

func errNotPublished(id string) error {
	return apierr.Invalid422("template_not_published", "Template %s has no published version.", id).
		WithNext("Publish a version: POST /v1/templates/" + id + "/publish.")
}

func errRender(err error) error {
	return apierr.Invalid422("template_render_failed", "The template cannot be rendered with these variables: %s.", err.Error())
}

// Render is the strict render of the published version: every required
// variable without a default must be given (422 template_variables_missing).
func (s *Service) Render(ctx context.Context, workspaceID, ref string, vars map[string]any, preheader string) (Rendered, error) {
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return Rendered{}, err
	}
	if t.PublishedVersionID == "" {
		return Rendered{}, errNotPublished(t.ID)
	}
	c, err := s.compiledVersion(ctx, t.ID, t.PublishedVersionID)
	if err != nil {
		return Rendered{}, err
	}
	return s.strict(t.ID, c, vars, preheader, false)
}

// compiledVersion is version vid of template tid, parsed: from the cache
// when it is there (versions never change), else read and cached.
// store.ErrNotFound when the template has no such version.
func (s *Service) compiledVersion(ctx context.Context, tid, vid string) (compiled, error) {
	if c, ok := s.cache.lookup(vid); ok {
		return c, nil
	}
	v, err := versionBy(ctx, s.db, tid, vid, 0)
	if errors.Is(err, store.ErrNotFound) {
		return compiled{}, err
	}
	if err != nil {
		return compiled{}, fmt.Errorf("reading template version: %w", err)
	}
	c, err := s.cache.get(v)
	if err != nil {
		return compiled{}, errRender(err)
	}
	return c, nil
}

// ForSend renders the published version of the template named by id or
// slug for a send: a missing template is 400 invalid_template, one without
// a published version 422 template_not_published, then as Render. One
// query; parsed versions are cached.
func (s *Service) ForSend(ctx context.Context, workspaceID, ref string, vars map[string]any) (Rendered, error) {
	p, err := s.Published(ctx, workspaceID, ref)
	if err != nil {
		return Rendered{}, err
	}
	return p.Render(vars)
}

// PublishedVersion is a template's published version as it was when read,
// to render many times as ForSend does (a broadcast's members) without
// reading the template again for each, or changing mid-way when another
// version is published.
type PublishedVersion struct {
	s          *Service
	templateID string
	versionID  string
	c          compiled
}

// VersionID is the id of the version read.
func (p *PublishedVersion) VersionID() string { return p.versionID }

// Published reads the published version of the template named by id or
// slug, with ForSend's errors.
func (s *Service) Published(ctx context.Context, workspaceID, ref string) (*PublishedVersion, error) {
	return s.readVersion(ctx, workspaceID, ref, "")
}

// Pinned reads the version versionID of the template named by id or slug,
// published or not any more, with Published's errors: a broadcast's fan-out
// run again after a crash renders the version its first run began with.
func (s *Service) Pinned(ctx context.Context, workspaceID, ref, versionID string) (*PublishedVersion, error) {
	return s.readVersion(ctx, workspaceID, ref, versionID)
}

// readVersion reads version vid of the live template ref, or its published
// version when vid is empty.
func (s *Service) readVersion(ctx context.Context, workspaceID, ref, vid string) (*PublishedVersion, error) {
	tid, published, err := publishedByRef(ctx, s.db, workspaceID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.BadRequest("invalid_template", "template %q does not exist on this workspace.", apierr.Clip(ref, 60))
	}
	if err != nil {
		return nil, fmt.Errorf("reading template: %w", err)
	}
	if vid == "" {
		vid = published
	}
	if vid == "" {
		return nil, errNotPublished(tid)
	}
	c, err := s.compiledVersion(ctx, tid, vid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.BadRequest("invalid_template", "template %q has no version %q.", apierr.Clip(ref, 60), apierr.Clip(vid, 60))
	}
	if err != nil {
		return nil, err
	}
	return &PublishedVersion{s: s, templateID: tid, versionID: vid, c: c}, nil
}

// Render renders the version for a send, as ForSend.
func (p *PublishedVersion) Render(vars map[string]any) (Rendered, error) {
	return p.s.strict(p.templateID, p.c, vars, "", true)
}

// SubjectShowsLinks says whether the version's subject names a personal link.
func (p *PublishedVersion) SubjectShowsLinks() bool { return p.c.tpl.SubjectShowsLinks() }

// Subject renders the version's subject alone, with Render's checks (a
// broadcast's fan-out: the body is rendered when it is sent).
func (p *PublishedVersion) Subject(vars map[string]any) (string, error) {
	values, err := strictValues(p.c, vars)
	if err != nil {
		return "", err
	}
	sub, err := p.c.tpl.Subject(values)
	if err != nil {
		return "", errRender(err)
	}
	return sub, nil
}

// strict renders v after applying its declared variables; forSend leaves
// the text part to the delivery engine when the version has none.
func (s *Service) strict(templateID string, c compiled, vars map[string]any, preheader string, forSend bool) (Rendered, error) {
	values, err := strictValues(c, vars)
	if err != nil {
		return Rendered{}, err
	}
	return run(templateID, c, values, preheader, forSend)
}

// strictValues are vars with the version's declared defaults, or the
// error naming the required variables missing.
func strictValues(c compiled, vars map[string]any) (map[string]any, error) {
	v := c.v
	values := make(map[string]any, len(vars)+len(v.Variables))
	for k, x := range vars {
		values[k] = x
	}
	missing := map[string]bool{}
	for _, d := range v.Variables {
		if _, ok := values[d.Name]; ok {
			continue
		}
		switch {
		case d.Default != nil:
			values[d.Name] = *d.Default
		case d.Required:
			missing[d.Name] = true
		}
	}
	if len(missing) > 0 {
		names := sortedKeys(missing)
		return nil, apierr.Invalid422("template_variables_missing", "Missing required variables: %s.", strings.Join(names, ", ")).
			With("missing", names).
			WithNext("Give them in variables, or declare a default in a new version.")
	}
	return values, nil
}

func run(templateID string, c compiled, values map[string]any, preheader string, forSend bool) (Rendered, error) {
	var out render.Output
	var err error
	if forSend {
		out, err = c.tpl.RenderForSend(values)
	} else {
		out, err = c.tpl.Render(values, preheader)
	}
	if err != nil {
		return Rendered{}, errRender(err)
	}
	return Rendered{TemplateID: templateID, VersionID: c.v.ID, Version: c.v.Version, Output: out}, nil
}

// Preview renders any version (versionID, else the published one, else the
// latest) leniently: a declared variable without a value or default, or a
// name the template uses at its top level and nobody gave, is filled with
// a sample, "[name]".
func (s *Service) Preview(ctx context.Context, workspaceID, ref, versionID string, vars map[string]any, preheader string) (Preview, error) {
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return Preview{}, err
	}
	var warnings []string
	id := versionID
	if id == "" {
		id = t.PublishedVersionID
	}
	v, err := versionBy(ctx, s.db, t.ID, id, t.LatestVersion)
	if errors.Is(err, store.ErrNotFound) {
		return Preview{}, apierr.NotFound("template version")
	}
	if err != nil {
		return Preview{}, err
	}
	if v.ID != t.PublishedVersionID {
		warnings = append(warnings, fmt.Sprintf("Version %d is not the published version; sends do not use it.", v.Version))
	}
	c, err := s.cache.get(v)
	if err != nil {
		return Preview{}, errRender(err)
	}
	return lenient(t.ID, c, vars, preheader, warnings)
}

// PreviewContent renders content that is not stored (an edit not yet
// saved, checked as a new version would be) as Preview does; nothing is
// written. The dashboard's live preview calls it as the person types.
func (s *Service) PreviewContent(content Content, vars map[string]any, preheader string) (Preview, error) {
	if err := content.check(); err != nil {
		return Preview{}, err
	}
	tpl, err := render.Parse(content.Subject, content.HTML, content.Text)
	if err != nil {
		return Preview{}, errRender(err)
	}
	return lenient("", compiled{v: Version{Variables: content.Variables}, tpl: tpl}, vars, preheader, []string{"Not saved yet: this is the edit as typed."})
}

// lenient renders c with vars, filling what is missing with samples (see
// Preview).
func lenient(templateID string, c compiled, vars map[string]any, preheader string, warnings []string) (Preview, error) {
	v := c.v
	values := make(map[string]any, len(vars)+len(v.Variables))
	for k, x := range vars {
		values[k] = x
	}
	var filled []string
	fill := func(name string) {
		values[name] = "[" + name + "]"
		filled = append(filled, name)
		warnings = append(warnings, fmt.Sprintf("%s was not given; filled with the sample %q.", name, "["+name+"]"))
	}
	for _, d := range v.Variables {
		if _, ok := values[d.Name]; ok {
			continue
		}
		if d.Default != nil {
			values[d.Name] = *d.Default
			continue
		}
		fill(d.Name)
	}
	for _, n := range c.tpl.Names() {
		if _, ok := values[n]; !ok {
			fill(n)
		}
	}
	r, err := run(templateID, c, values, preheader, false)
	if err != nil {
		return Preview{}, err
	}
	if filled == nil {
		filled = []string{}
	}
	if warnings == nil {
		warnings = []string{}
	}
	return Preview{Rendered: r, Values: values, FilledWithSamples: filled, Warnings: warnings}, nil
}
