// Package automations keeps YAML-defined flows: their definitions, checked
// whole at save time, and every version of their YAML byte for byte; and
// carries their runs, started by an API call or by the contacts area's
// automation events, step by step on the durable queue (engine.go).
package automations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/groupcommit"
	"mailroom/internal/ids"
	"mailroom/internal/render"
	"mailroom/internal/secretbox"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/templates"
	"mailroom/internal/webhooks"
)

// MaxVersionsListed is the spec's "last 50" versions.
const MaxVersionsListed = 50

// Automation is one stored flow at its current version.
type Automation struct {
	ID, WorkspaceID, Name, Slug string
	Trigger                     string // the trigger event
	TriggerTag                  string
	TriggerAudienceID           string
	Enabled                     bool
	Version                     int
	YAML                        string
	LastError                   *string
	SigningSecret               string // signs the webhook steps' posts
	CreatedAt, UpdatedAt        time.Time
}

// Version is one saved YAML of an automation.
type Version struct {
	ID        string
	Version   int
	YAML      string
	CreatedAt time.Time
}

// Service holds the rules of automations and carries their runs.
type Service struct {
	box          *secretbox.Box
	db           *store.DB
	clock        clock.Clock
	templates    *templates.Service
	contacts     *contacts.Service
	sending      *sending.Service
	publicURL    string
	allowPrivate bool
	hookClient   *http.Client
	progs        programs
	commits      *groupcommit.Committer[struct{}]
	links        func(workspaceID, topicID, email string) render.Links
}

// Config builds a Service.
type Config struct {
	DB    *store.DB
	Clock clock.Clock
	// Templates and Contacts answer whether the templates and audiences a
	// definition names exist; Contacts also serves the runs' contacts.
	Templates *templates.Service
	Contacts  *contacts.Service
	// Sending books the send steps' emails, through the send API's rules.
	Sending   *sending.Service
	PublicURL string
	// AllowPrivate lets webhook steps reach private addresses (tests; as
	// MAILROOM_WEBHOOK_ALLOW_PRIVATE does for endpoints).
	AllowPrivate bool
	Log          *slog.Logger
	Registry     prometheus.Registerer
	// Box seals the webhook steps' signing secret at rest, as the webhook
	// endpoints' secrets are; nil keeps it as it is (tests).
	Box *secretbox.Box
	// Links are a contact's personal links for a topic ("" = every list),
	// as broadcasts have them (topics.Service.Links); nil: send steps carry
	// none.
	Links func(workspaceID, topicID, email string) render.Links
}

// New builds the service.
func New(c Config) *Service {
	s := &Service{db: c.DB, clock: c.Clock, templates: c.Templates, contacts: c.Contacts, sending: c.Sending, publicURL: c.PublicURL,
		allowPrivate: c.AllowPrivate, box: c.Box, links: c.Links, hookClient: webhooks.NewHTTPClient(c.AllowPrivate), progs: programs{m: map[string]*compiled{}}}
	// One committer: on PostgreSQL two concurrent batches could lock the
	// same contact and run in opposite orders.
	s.commits = groupcommit.New(groupcommit.Config[struct{}]{Name: "automations", DB: c.DB, Log: c.Log,
		Isolation: groupcommit.Savepoint, MaxBatch: 128, FlushGather: 8, Registry: c.Registry})
	return s
}

func notFound() error { return apierr.NotFound("automation") }

// TriggerURL is the full URL of the trigger route for api.call automations.
func (s *Service) TriggerURL(a Automation) string {
	if a.Trigger != EventAPICall {
		return ""
	}
	return s.publicURL + "/v1/automations/" + a.ID + "/trigger"
}

// Invalid is the refusal of a definition: 400 invalid_automation naming the
// first problem's field, line and fix, with every problem in problems[].
func Invalid(problems []Problem) error {
	first := problems[0]
	msg := first.String()
	if len(problems) > 1 {
		msg = fmt.Sprintf("%d problems; the first: %s", len(problems), msg)
	}
	return apierr.BadRequest("invalid_automation", "%s", msg).WithNext(first.Fix).
		With("line", first.Line).With("field", first.Field).With("problems", problems)
}

// check parses and checks a definition, including that the templates and
// audiences it names exist on the workspace.
func (s *Service) check(ctx context.Context, workspaceID string, src []byte) (Definition, error) {
	def, problems := Parse(src)
	if def.Trigger.Custom {
		if _, err := eventByRef(ctx, s.db, workspaceID, def.Trigger.Event); errors.Is(err, store.ErrNotFound) {
			problems = append(problems, Problem{Field: "trigger.event", Line: def.Trigger.Line,
				Message: fmt.Sprintf("no custom event %q on this workspace", apierr.Clip(def.Trigger.Event, 60)),
				Fix:     "Define it first with POST /v1/events { \"name\": ... }, or use one of " + strings.Join(triggerEvents, ", ") + "."})
		} else if err != nil {
			return def, err
		}
	}
	if def.Trigger.AudienceID != "" {
		if _, err := s.contacts.Audience(ctx, workspaceID, def.Trigger.AudienceID); err != nil {
			if !apierr.Is(err, "not_found") {
				return def, err
			}
			problems = append(problems, Problem{Field: "trigger.audience_id", Line: def.Trigger.Line,
				Message: fmt.Sprintf("no audience %q on this workspace", apierr.Clip(def.Trigger.AudienceID, 60)),
				Fix:     "Use the id of an existing audience (GET /v1/audiences), or omit audience_id to match any."})
		}
	}
	seen := map[string]error{}
	var walk func([]Step) error
	walk = func(steps []Step) error {
		for _, st := range steps {
			if st.Send != nil && st.Send.Template != "" {
				err, done := seen[st.Send.Template]
				if !done {
					_, err = s.templates.Get(ctx, workspaceID, st.Send.Template)
					seen[st.Send.Template] = err
				}
				if err != nil {
					if !apierr.Is(err, "not_found") {
						return err
					}
					problems = append(problems, Problem{Field: st.Field + ".send.template", Line: st.Send.TemplateLine,
						Message: fmt.Sprintf("no template %q on this workspace", apierr.Clip(st.Send.Template, 60)),
						Fix:     "Create the template first, or use the id or slug of an existing one (GET /v1/templates)."})
				}
			}
			if st.Webhook != "" {
				if err := webhooks.ValidateURL(st.Webhook, s.allowPrivate); err != nil {
					msg := err.Error()
					if ae, ok := apierr.As(err); ok {
						msg = ae.Message
					}
					problems = append(problems, Problem{Field: st.Field + ".webhook.url", Line: st.Line, Message: msg,
						Fix: "Point the webhook at a public https URL, e.g. https://example.com/hook."})
				}
			}
			if st.If != nil {
				if err := walk(st.If.Then); err != nil {
					return err
				}
				if err := walk(st.If.Else); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(def.Steps); err != nil {
		return def, err
	}
	if len(problems) > 0 {
		sort.SliceStable(problems, func(i, j int) bool { return problems[i].Line < problems[j].Line })
		return def, Invalid(problems)
	}
	return def, nil
}

// Create checks and stores a new automation, enabled, at version 1.
func (s *Service) Create(ctx context.Context, workspaceID string, src []byte) (Automation, error) {
	return s.CreateEnabled(ctx, workspaceID, src, true)
}

// CreateEnabled is Create with the automation enabled or not (a duplicate,
// or the Resend SDKs' status: disabled, starts disabled).
func (s *Service) CreateEnabled(ctx context.Context, workspaceID string, src []byte, enabled bool) (Automation, error) {
	def, err := s.check(ctx, workspaceID, src)
	if err != nil {
		return Automation{}, err
	}
	now := s.clock.Now()
	a := Automation{ID: ids.New("auto"), WorkspaceID: workspaceID, Name: def.Name, Trigger: def.Trigger.Event,
		TriggerTag: def.Trigger.Tag, TriggerAudienceID: def.Trigger.AudienceID, Enabled: enabled, Version: 1,
		YAML: string(src), CreatedAt: now, UpdatedAt: now, SigningSecret: webhooks.NewSecret()}
	base := templates.Slugify(def.Name)
	if base == "" {
		base = "automation"
	}
	for attempt := 0; ; attempt++ {
		err = s.db.InTx(ctx, func(tx *store.Tx) error {
			a.Slug, err = freeSlug(ctx, tx, workspaceID, base)
			if err != nil {
				return err
			}
			stored := a
			if stored.SigningSecret, err = s.seal(a.SigningSecret); err != nil {
				return err
			}
			if err := insertAutomation(ctx, tx, stored); err != nil {
				return err
			}
			return insertVersion(ctx, tx, Version{ID: ids.New("autv"), Version: 1, YAML: a.YAML, CreatedAt: now}, a.ID, workspaceID)
		})
		if err != nil && store.IsUniqueViolation(err) && attempt < 3 {
			continue // a concurrent create took the slug
		}
		return a, err
	}
}

func freeSlug(ctx context.Context, q store.Querier, workspaceID, base string) (string, error) {
	for n := 1; n < 1000; n++ {
		slug := base
		if n > 1 {
			slug = base + "-" + strconv.Itoa(n)
		}
		taken, err := slugTaken(ctx, q, workspaceID, slug)
		if err != nil || !taken {
			return slug, err
		}
	}
	return base + "-" + ids.New("x")[2:10], nil
}

// List returns the workspace's automations, newest first (at most 1000).
func (s *Service) List(ctx context.Context, workspaceID string) ([]Automation, error) {
	return listAutomations(ctx, s.db, workspaceID, 1000)
}

// Get returns one automation by id or slug.
func (s *Service) Get(ctx context.Context, workspaceID, ref string) (Automation, error) {
	a, err := automationByRef(ctx, s.db, workspaceID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return a, notFound()
	}
	if err != nil {
		return a, err
	}
	a.SigningSecret, err = s.open(a.SigningSecret)
	return a, err
}

// seal and open keep the signing secret sealed in the database.
func (s *Service) seal(secret string) (string, error) {
	if s.box == nil {
		return secret, nil
	}
	return s.box.Seal([]byte(secret))
}

func (s *Service) open(sealed string) (string, error) {
	if s.box == nil {
		return sealed, nil
	}
	b, err := s.box.Open(sealed)
	if err != nil {
		return "", fmt.Errorf("automations: opening the signing secret: %w", err)
	}
	return string(b), nil
}

// Definition parses a stored automation's YAML (checked when saved).
func (a Automation) Definition() Definition {
	d, _ := Parse([]byte(a.YAML))
	return d
}

// Update enables or disables an automation and, when yaml differs from the
// current version's, writes it as a new version.
func (s *Service) Update(ctx context.Context, workspaceID, ref string, enabled *bool, yaml []byte) (Automation, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return a, err
	}
	var def Definition
	newYAML := yaml != nil && string(yaml) != a.YAML
	if newYAML {
		if def, err = s.check(ctx, workspaceID, yaml); err != nil {
			return a, err
		}
	}
	now := s.clock.Now()
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if enabled != nil {
			if err := setEnabled(ctx, tx, workspaceID, a.ID, *enabled, now); err != nil {
				return err
			}
		}
		if !newYAML {
			return nil
		}
		n, err := bumpVersion(ctx, tx, workspaceID, a.ID, def, string(yaml), now)
		if err != nil {
			return err
		}
		return insertVersion(ctx, tx, Version{ID: ids.New("autv"), Version: n, YAML: string(yaml), CreatedAt: now}, a.ID, workspaceID)
	})
	if errors.Is(err, store.ErrNotFound) {
		return a, notFound()
	}
	if err != nil {
		return a, err
	}
	return s.Get(ctx, workspaceID, a.ID)
}

// Delete removes an automation and cancels its waiting (and running) runs
// in the same transaction.
func (s *Service) Delete(ctx context.Context, workspaceID, ref string) (string, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return "", err
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error { return softDelete(ctx, tx, workspaceID, a.ID, s.clock.Now()) })
	if errors.Is(err, store.ErrNotFound) {
		return "", notFound()
	}
	return a.ID, err
}

// Versions lists the automation's last 50 versions, newest first.
func (s *Service) Versions(ctx context.Context, workspaceID, ref string) (Automation, []Version, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return a, nil, err
	}
	vs, err := listVersions(ctx, s.db, workspaceID, a.ID, MaxVersionsListed)
	return a, vs, err
}

// Restore writes an earlier version's YAML as a new version. It is checked
// again: a template it names may have been deleted since.
func (s *Service) Restore(ctx context.Context, workspaceID, ref, versionID string) (Automation, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return a, err
	}
	v, err := versionByID(ctx, s.db, workspaceID, a.ID, versionID)
	if errors.Is(err, store.ErrNotFound) {
		return a, apierr.NotFound("automation version")
	}
	if err != nil {
		return a, err
	}
	def, err := s.check(ctx, workspaceID, []byte(v.YAML))
	if err != nil {
		return a, err
	}
	now := s.clock.Now()
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		n, err := bumpVersion(ctx, tx, workspaceID, a.ID, def, v.YAML, now)
		if err != nil {
			return err
		}
		return insertVersion(ctx, tx, Version{ID: ids.New("autv"), Version: n, YAML: v.YAML, CreatedAt: now}, a.ID, workspaceID)
	})
	if errors.Is(err, store.ErrNotFound) {
		return a, notFound()
	}
	if err != nil {
		return a, err
	}
	return s.Get(ctx, workspaceID, a.ID)
}
