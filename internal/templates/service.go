package templates

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/ids"
	"mailroom/internal/render"
	"mailroom/internal/store"
)

// Service serves the template routes and renders templates for sends.
type Service struct {
	db    *store.DB
	clock clock.Clock
	cache compiledCache
}

// New builds the service.
func New(db *store.DB, c clock.Clock) *Service {
	if c == nil {
		c = clock.Real{}
	}
	return &Service{db: db, clock: c, cache: compiledCache{m: map[string]compiled{}}}
}

func notFound() error { return apierr.NotFound("template") }

// Content is what a version holds.
type Content struct {
	Subject   string
	HTML      string
	Text      string
	Variables []Variable
}

// CreateInput is POST /v1/templates.
type CreateInput struct {
	Name        string
	Slug        string // "" derives it from Name
	Description string
	Content
	Publish bool
}

// check validates a version's content: it parses, its variables are sound.
func (c Content) check() error {
	if _, err := render.Parse(c.Subject, c.HTML, c.Text); err != nil {
		return apierr.InvalidRequest("The template %s.", err.Error())
	}
	if len(c.Variables) > MaxVariables {
		return apierr.InvalidRequest("variables has %d entries; at most %d are allowed.", len(c.Variables), MaxVariables)
	}
	seen := map[string]bool{}
	for i, v := range c.Variables {
		if v.Name == "" || len(v.Name) > MaxVariableName || strings.ContainsAny(v.Name, "{}# \t\r\n") {
			return apierr.InvalidRequest("variables[%d]: name must be 1 to %d characters without braces, '#' or spaces.", i, MaxVariableName)
		}
		if seen[v.Name] {
			return apierr.InvalidRequest("variables[%d]: %q is declared twice.", i, v.Name)
		}
		seen[v.Name] = true
	}
	return nil
}

func checkMeta(name, slug, description string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxNameLen {
		return apierr.InvalidRequest("name must be 1 to %d characters.", MaxNameLen)
	}
	if slug != "" && (len(slug) > MaxSlugLen || !slugRE.MatchString(slug)) {
		return apierr.InvalidRequest("slug %q must be 1 to %d lowercase letters, digits and inner hyphens.", apierr.Clip(slug, 60), MaxSlugLen).
			WithNext("Omit slug to derive it from the name.")
	}
	if len(description) > MaxDescription {
		return apierr.InvalidRequest("description is over %d characters.", MaxDescription)
	}
	return nil
}

func slugTakenErr(slug string) error {
	return apierr.Conflict("slug_taken", "Another template of this workspace has the slug %q.", slug).
		WithNext("Choose another slug, or omit it to derive a free one from the name.")
}

// Create writes the template and its first version, published when
// in.Publish is true.
func (s *Service) Create(ctx context.Context, workspaceID string, in CreateInput) (Template, error) {
	if err := checkMeta(in.Name, in.Slug, in.Description); err != nil {
		return Template{}, err
	}
	if err := in.Content.check(); err != nil {
		return Template{}, err
	}
	if in.Publish && in.HTML == "" && in.Text == "" {
		return Template{}, errNoBody(1)
	}
	now := s.clock.Now().UTC()
	t := Template{ID: ids.New("tpl"), WorkspaceID: workspaceID, Name: in.Name, Slug: in.Slug, Description: in.Description, CreatedAt: now, UpdatedAt: now}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		if t.Slug == "" {
			slug, err := freeSlug(ctx, tx, workspaceID, Slugify(in.Name))
			if err != nil {
				return err
			}
			t.Slug = slug
		} else if taken, err := slugTaken(ctx, tx, workspaceID, t.Slug, ""); err != nil {
			return err
		} else if taken {
			return slugTakenErr(t.Slug)
		}
		if err := insertTemplate(ctx, tx, t); err != nil {
			if store.IsUniqueViolation(err) {
				return slugTakenErr(t.Slug)
			}
			return fmt.Errorf("creating template: %w", err)
		}
		v, err := insertVersion(ctx, tx, workspaceID, t.ID, Version{Subject: in.Subject, HTML: in.HTML, Text: in.Text, Variables: in.Variables}, now)
		if err != nil {
			return err
		}
		t.LatestVersion, t.Versions = v.Version, []Version{v}
		if in.Publish {
			t.PublishedVersionID = v.ID
			return setPublished(ctx, tx, t.ID, v.ID, now)
		}
		return nil
	})
	return t, err
}

// freeSlug is base, or base-2, base-3, ... : the first not taken.
func freeSlug(ctx context.Context, q store.Querier, workspaceID, base string) (string, error) {
	for n := 1; n < 1000; n++ {
		slug := base
		if n > 1 {
			slug = base + "-" + strconv.Itoa(n)
		}
		taken, err := slugTaken(ctx, q, workspaceID, slug, "")
		if err != nil || !taken {
			return slug, err
		}
	}
	return base + "-" + ids.New("x")[2:10], nil
}

// List returns the workspace's live templates, newest first (at most 1000).
func (s *Service) List(ctx context.Context, workspaceID string) ([]Template, error) {
	return listTemplates(ctx, s.db, workspaceID, 1000)
}

// Get returns a live template, by id or slug, with every version.
func (s *Service) Get(ctx context.Context, workspaceID, ref string) (Template, error) {
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return t, err
	}
	t.Versions, err = versions(ctx, s.db, t.ID)
	return t, err
}

func (s *Service) lookup(ctx context.Context, workspaceID, ref string) (Template, error) {
	t, err := templateByRef(ctx, s.db, workspaceID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return t, notFound()
	}
	if err != nil {
		return t, fmt.Errorf("reading template: %w", err)
	}
	return t, nil
}

// Update changes the template's name, slug or description (nil keeps one).
func (s *Service) Update(ctx context.Context, workspaceID, ref string, name, slug, description *string) (Template, error) {
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return t, err
	}
	if name != nil {
		t.Name = *name
	}
	if slug != nil {
		t.Slug = *slug
		if t.Slug == "" {
			return t, apierr.InvalidRequest("slug cannot be empty.")
		}
	}
	if description != nil {
		t.Description = *description
	}
	if err := checkMeta(t.Name, t.Slug, t.Description); err != nil {
		return t, err
	}
	if taken, err := slugTaken(ctx, s.db, workspaceID, t.Slug, t.ID); err != nil {
		return t, err
	} else if taken {
		return t, slugTakenErr(t.Slug)
	}
	t.UpdatedAt = s.clock.Now().UTC()
	if err := updateTemplate(ctx, s.db, t); err != nil {
		if errors.Is(err, errSlugTaken) {
			return t, slugTakenErr(t.Slug)
		}
		return t, fmt.Errorf("updating template: %w", err)
	}
	return t, nil
}

// Delete soft-deletes the template: reads and sends no longer find it, and
// its slug is free again.
func (s *Service) Delete(ctx context.Context, workspaceID, ref string) (string, error) {
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return "", err
	}
	ok, err := softDelete(ctx, s.db, workspaceID, t.ID, s.clock.Now().UTC())
	if err != nil {
		return "", err
	}
	if !ok {
		return "", notFound()
	}
	return t.ID, nil
}

// AddVersion writes a draft version; it never publishes. html or text is
// required.
func (s *Service) AddVersion(ctx context.Context, workspaceID, ref string, c Content) (Version, error) {
	if c.HTML == "" && c.Text == "" {
		return Version{}, apierr.InvalidRequest("A version needs html, text or both.")
	}
	if err := c.check(); err != nil {
		return Version{}, err
	}
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return Version{}, err
	}
	if t.LatestVersion >= MaxVersions {
		return Version{}, apierr.Invalid422("too_many_versions", "The template has %d versions; at most %d are kept.", t.LatestVersion, MaxVersions).
			WithNext("Create a new template.")
	}
	var v Version
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		v, err = insertVersion(ctx, tx, workspaceID, t.ID, Version{Subject: c.Subject, HTML: c.HTML, Text: c.Text, Variables: c.Variables}, s.clock.Now().UTC())
		if errors.Is(err, store.ErrNotFound) {
			return notFound()
		}
		return err
	})
	return v, err
}

// Versions returns the template (without versions) and its versions,
// newest first.
func (s *Service) Versions(ctx context.Context, workspaceID, ref string) (Template, []Version, error) {
	t, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return t, nil, err
	}
	vs := t.Versions
	t.Versions = nil
	return t, vs, nil
}

func errNoBody(n int) error {
	return apierr.InvalidRequest("Version %d has neither html nor text, so it cannot be published.", n).
		WithNext("Add a version with a body (POST .../versions), then publish it.")
}

// Publish points live sends at a version: by id, else by number, else the
// latest. It answers the published version's id.
func (s *Service) Publish(ctx context.Context, workspaceID, ref, versionID string, number *int) (string, error) {
	t, err := s.lookup(ctx, workspaceID, ref)
	if err != nil {
		return "", err
	}
	n := t.LatestVersion
	if number != nil {
		n = *number
	}
	v, err := versionBy(ctx, s.db, t.ID, versionID, n)
	if errors.Is(err, store.ErrNotFound) {
		if versionID != "" {
			return "", apierr.NotFound("template version").WithNext("GET /v1/templates/" + t.ID + "/versions lists them.")
		}
		return "", apierr.NotFound("template version").WithNext(fmt.Sprintf("The template's versions run from 1 to %d.", t.LatestVersion))
	}
	if err != nil {
		return "", err
	}
	if v.HTML == "" && v.Text == "" {
		return "", errNoBody(v.Version)
	}
	if err := setPublished(ctx, s.db, t.ID, v.ID, s.clock.Now().UTC()); err != nil {
		return "", fmt.Errorf("publishing template: %w", err)
	}
	return v.ID, nil
}

// sortedKeys is the map's keys in order, for stable messages.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// compiledCache keeps parsed versions by id: a version never changes, so
// an entry never goes stale. It is bounded; when full it starts over.
type compiledCache struct {
	mu sync.Mutex
	m  map[string]compiled
}

type compiled struct {
	v   Version // without its bodies: the parsed template stands for them
	tpl *render.Template
}

const maxCompiled = 2000

// lookup is the cached version (bodies left out) and its parsed template.
func (c *compiledCache) lookup(id string) (compiled, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	return e, ok
}

// get parses v (with its bodies) unless it is cached.
func (c *compiledCache) get(v Version) (compiled, error) {
	if e, ok := c.lookup(v.ID); ok {
		return e, nil
	}
	t, err := render.Parse(v.Subject, v.HTML, v.Text)
	if err != nil {
		return compiled{}, err
	}
	v.Subject, v.HTML, v.Text = "", "", ""
	e := compiled{v: v, tpl: t}
	c.mu.Lock()
	if len(c.m) >= maxCompiled {
		c.m = map[string]compiled{}
	}
	c.m[v.ID] = e
	c.mu.Unlock()
	return e, nil
}

// CopyName is "<name> (copy)", the name a duplicate takes, the
// original clipped by whole characters so the copy stays within max bytes.
func CopyName(name string, max int) string {
	const suffix = " (copy)"
	r := []rune(name)
	for len(string(r))+len(suffix) > max && len(r) > 0 {
		r = r[:len(r)-1]
	}
	return string(r) + suffix
}

// Duplicate copies a template as a new draft, "<name> (copy)" with a slug
// of its own, whose one version is the original's latest (the Resend SDKs'
// templates.duplicate): nothing is published.
func (s *Service) Duplicate(ctx context.Context, workspaceID, ref string) (Template, error) {
	t, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return t, err
	}
	var c Content
	if len(t.Versions) > 0 {
		v := t.Versions[0] // newest first
		c = Content{Subject: v.Subject, HTML: v.HTML, Text: v.Text, Variables: v.Variables}
	}
	return s.Create(ctx, workspaceID, CreateInput{Name: CopyName(t.Name, MaxNameLen), Description: t.Description, Content: c})
}
