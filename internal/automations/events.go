package automations

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
)

// Event is a custom event definition (the Resend SDK's events.*): a name
// that automations start on (trigger: { event: <name> }) and an optional
// schema the payloads of POST /v1/events/send are checked against.
type Event struct {
	ID, WorkspaceID, Name string
	Schema                map[string]string // field -> string, number, boolean or date; nil for none
	CreatedAt             time.Time
	UpdatedAt             *time.Time
}

// Schema field types, as the SDK declares them.
var schemaTypes = []string{"string", "number", "boolean", "date"}

// MaxEventName bounds a custom event's name; MaxSchemaFields its schema.
const (
	MaxEventName    = 100
	MaxSchemaFields = 50
)

var eventName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// ValidEventName says why a custom event name is refused, or nil: a dotted
// word of at most 100 characters that is not a built-in trigger event.
func ValidEventName(name string) error {
	switch {
	case name == "":
		return apierr.InvalidRequest("name is required, e.g. user.created.")
	case len(name) > MaxEventName:
		return apierr.InvalidRequest("name is longer than %d characters.", MaxEventName)
	case !eventName.MatchString(name):
		return apierr.InvalidRequest("name %q may hold only letters, digits, '.', '_', ':' and '-', and begin with a letter or digit.", apierr.Clip(name, 60))
	case contains(triggerEvents, name):
		return apierr.InvalidRequest("%s is a built-in trigger event; name a custom event otherwise.", name)
	}
	return nil
}

func checkSchema(schema map[string]string) error {
	if len(schema) > MaxSchemaFields {
		return apierr.InvalidRequest("schema has more than %d fields.", MaxSchemaFields)
	}
	for k, v := range schema {
		if k == "" {
			return apierr.InvalidRequest("schema has a field with an empty name.")
		}
		if !slices.Contains(schemaTypes, v) {
			return apierr.InvalidRequest("schema.%s is %q; write one of %s.", apierr.Clip(k, 60), apierr.Clip(v, 60), strings.Join(schemaTypes, ", "))
		}
	}
	return nil
}

func eventNotFound() error { return apierr.NotFound("event") }

// CreateEvent defines a custom event; a name already defined is 409.
func (s *Service) CreateEvent(ctx context.Context, workspaceID, name string, schema map[string]string) (Event, error) {
	if err := ValidEventName(name); err != nil {
		return Event{}, err
	}
	if err := checkSchema(schema); err != nil {
		return Event{}, err
	}
	e := Event{ID: ids.New("evt"), WorkspaceID: workspaceID, Name: name, Schema: schema, CreatedAt: s.clock.Now()}
	err := insertEvent(ctx, s.db, e)
	if store.IsUniqueViolation(err) {
		return Event{}, apierr.Conflict("event_exists", "A custom event named %s already exists.", name).
			WithNext("Read it with GET /v1/events/" + name + ", or change its schema with PATCH.")
	}
	return e, err
}

// Event reads a custom event by id or name.
func (s *Service) Event(ctx context.Context, workspaceID, ref string) (Event, error) {
	e, err := eventByRef(ctx, s.db, workspaceID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return e, eventNotFound()
	}
	return e, err
}

// Events lists custom events newest first (limit+1 rows are asked by
// callers that page), after the event before names.
func (s *Service) Events(ctx context.Context, workspaceID string, before *time.Time, beforeID string, limit int) ([]Event, error) {
	return listEvents(ctx, s.db, workspaceID, before, beforeID, limit)
}

// SetEventSchema replaces a custom event's schema (nil removes it).
func (s *Service) SetEventSchema(ctx context.Context, workspaceID, ref string, schema map[string]string) (Event, error) {
	if err := checkSchema(schema); err != nil {
		return Event{}, err
	}
	e, err := s.Event(ctx, workspaceID, ref)
	if err != nil {
		return e, err
	}
	now := s.clock.Now()
	if err := setEventSchema(ctx, s.db, workspaceID, e.ID, schema, now); err != nil {
		return e, err
	}
	e.Schema, e.UpdatedAt = schema, &now
	return e, nil
}

// DeleteEvent removes a custom event. An automation that starts on it
// stays, and starts no run until the name is defined again.
func (s *Service) DeleteEvent(ctx context.Context, workspaceID, ref string) (string, error) {
	e, err := s.Event(ctx, workspaceID, ref)
	if err != nil {
		return "", err
	}
	if err := deleteEvent(ctx, s.db, workspaceID, e.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	return e.ID, nil
}

// SendEventInput is POST /v1/events/send: the event's name, its contact
// (by id, or by address, created when new) and the payload the runs read
// as {{ trigger.<name> }}.
type SendEventInput struct {
	Event            string
	ContactID, Email string
	Payload          map[string]any
}

// SendEvent starts a run of every live, enabled automation whose trigger
// is the named custom event, for the contact, with the payload as trigger
// data; it answers the runs started (none when no automation listens).
func (s *Service) SendEvent(ctx context.Context, workspaceID string, in SendEventInput) ([]Run, error) {
	e, err := eventByRef(ctx, s.db, workspaceID, in.Event)
	if errors.Is(err, store.ErrNotFound) || (err == nil && e.Name != in.Event) {
		return nil, apierr.NotFound("event").WithNext("Define it first with POST /v1/events { \"name\": \"" + apierr.Clip(in.Event, 60) + "\" }.")
	} else if err != nil {
		return nil, err
	}
	if err := checkPayload(e.Schema, in.Payload); err != nil {
		return nil, err
	}
	if b, err := json.Marshal(in.Payload); err != nil || len(b) > MaxTriggerData {
		return nil, apierr.InvalidRequest("payload is larger than %d KiB once encoded.", MaxTriggerData>>10)
	}
	c, err := s.triggerContact(ctx, workspaceID, TriggerInput{ContactID: in.ContactID, Email: in.Email})
	if err != nil {
		return nil, err
	}
	as, err := automationsOnEvent(ctx, s.db, workspaceID, e.Name)
	if err != nil || len(as) == 0 {
		return nil, err
	}
	now, key := s.clock.Now(), "event:"+ids.New("evs")
	runs := make([]Run, 0, len(as))
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		for _, a := range as {
			r := newRun(a, c.ID, c.Email, "", key, in.Payload, now)
			if err := insertRun(ctx, tx, r); err != nil {
				return err
			}
			tx.AddJob(jobs.AutomationRunArgs{RunID: r.ID, WorkspaceID: workspaceID})
			runs = append(runs, r)
		}
		return nil
	})
	return runs, err
}

// checkPayload holds a payload to the event's schema: each field the schema
// names, when present, has its type (a date is RFC 3339 text).
func checkPayload(schema map[string]string, payload map[string]any) error {
	keys := make([]string, 0, len(schema))
	for k := range schema {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := payload[k]
		if !ok || v == nil {
			continue
		}
		good := false
		switch schema[k] {
		case "string":
			_, good = v.(string)
		case "number":
			_, good = v.(float64)
		case "boolean":
			_, good = v.(bool)
		case "date":
			if t, isText := v.(string); isText {
				_, err := time.Parse(time.RFC3339, t)
				good = err == nil
			}
		}
		if !good {
			return apierr.Invalid422("invalid_payload", "payload.%s must be a %s, as the event's schema says.", apierr.Clip(k, 60), schema[k])
		}
	}
	return nil
}
