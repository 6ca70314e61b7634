package contacts

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Audience is a list of contacts with its double opt-in settings.
type Audience struct {
	ID                  string
	WorkspaceID         string
	Name                string
	Description         string
	RequireDoubleOptIn  *bool   // nil: the workspace default
	ConfirmationSubject *string // nil: the default subject
	ConfirmationBody    *string // nil: the default body
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// WorkspaceDoubleOptIn is the workspace default an audience without its own
// setting follows: single opt-in, until workspaces carry the setting.
const WorkspaceDoubleOptIn = false

// DoubleOptIn says whether the audience requires confirmation and whether
// that comes from the audience ("audience") or the workspace ("workspace").
func (a Audience) DoubleOptIn() (bool, string) {
	if a.RequireDoubleOptIn != nil {
		return *a.RequireDoubleOptIn, "audience"
	}
	return WorkspaceDoubleOptIn, "workspace"
}

// Opt is a PATCH field that may be absent, null or a value.
type Opt[T any] struct {
	Set   bool
	Value *T // nil with Set: null
}

// AudiencePatch changes an audience; absent fields are untouched.
type AudiencePatch struct {
	Name                *string
	Description         *string
	RequireDoubleOptIn  Opt[bool]
	ConfirmationSubject Opt[string]
	ConfirmationBody    Opt[string]
}

const (
	maxAudienceName = 200
	maxDescription  = 2000
	maxConfirmText  = 100 << 10
)

func errAudienceNotFound() error { return apierr.NotFound("audience") }

func errAudienceExists(name string) error {
	return apierr.Conflict("audience_exists", "An audience named %q already exists.", name).
		WithNext("Pick another name, or use the existing audience (GET /v1/audiences).")
}

func checkAudienceName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > maxAudienceName || strings.ContainsAny(name, "\r\n") {
		return "", apierr.InvalidRequest("name must have 1 to %d characters on one line.", maxAudienceName)
	}
	return name, nil
}

func checkDescription(d string) error {
	if utf8.RuneCountInString(d) > maxDescription {
		return apierr.InvalidRequest("description is longer than %d characters.", maxDescription)
	}
	return nil
}

// CreateAudience adds an audience; a name taken by a live audience of the
// workspace answers 409 audience_exists.
func (s *Service) CreateAudience(ctx context.Context, workspaceID, name, description string) (Audience, error) {
	name, err := checkAudienceName(name)
	if err != nil {
		return Audience{}, err
	}
	if err := checkDescription(description); err != nil {
		return Audience{}, err
	}
	now := s.clock.Now()
	a := Audience{ID: ids.New("aud"), WorkspaceID: workspaceID, Name: name, Description: description, CreatedAt: now, UpdatedAt: now}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if taken, err := audienceNameTaken(ctx, tx, workspaceID, name, ""); err != nil {
			return err
		} else if taken {
			return errAudienceExists(name)
		}
		if err := insertAudience(ctx, tx, a); err != nil {
			if store.IsUniqueViolation(err) {
				return errAudienceExists(name)
			}
			return err
		}
		return nil
	})
	return a, err
}

// Audiences lists the workspace's live audiences, oldest first.
func (s *Service) Audiences(ctx context.Context, workspaceID string) ([]Audience, error) {
	return listAudiences(ctx, s.db, workspaceID)
}

// Audience reads one live audience.
func (s *Service) Audience(ctx context.Context, workspaceID, id string) (Audience, error) {
	a, err := audienceByID(ctx, s.db, workspaceID, id)
	return a, notFound(err, errAudienceNotFound)
}

// UpdateAudience applies a patch.
func (s *Service) UpdateAudience(ctx context.Context, workspaceID, id string, p AudiencePatch) (Audience, error) {
	if p.Name != nil {
		n, err := checkAudienceName(*p.Name)
		if err != nil {
			return Audience{}, err
		}
		p.Name = &n
	}
	if p.Description != nil {
		if err := checkDescription(*p.Description); err != nil {
			return Audience{}, err
		}
	}
	if v := p.ConfirmationSubject.Value; v != nil && (strings.TrimSpace(*v) == "" || len(*v) > 998 || strings.ContainsAny(*v, "\r\n")) {
		return Audience{}, apierr.InvalidRequest("confirmation_subject must be one line of 1 to 998 characters; null restores the default.")
	}
	if v := p.ConfirmationBody.Value; v != nil {
		if len(*v) > maxConfirmText {
			return Audience{}, apierr.InvalidRequest("confirmation_body is longer than %d bytes.", maxConfirmText)
		}
		if !mentionsConfirmURL(*v) {
			return Audience{}, apierr.InvalidRequest("confirmation_body must contain {{ confirm_url }}, or the reader cannot confirm.").
				WithNext("Add {{ confirm_url }} where the link should be; null restores the default body.")
		}
	}
	var a Audience
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if a, err = audienceByID(ctx, tx, workspaceID, id); err != nil {
			return notFound(err, errAudienceNotFound)
		}
		if p.Name != nil && *p.Name != a.Name {
			if taken, err := audienceNameTaken(ctx, tx, workspaceID, *p.Name, a.ID); err != nil {
				return err
			} else if taken {
				return errAudienceExists(*p.Name)
			}
			a.Name = *p.Name
		}
		if p.Description != nil {
			a.Description = *p.Description
		}
		if p.RequireDoubleOptIn.Set {
			a.RequireDoubleOptIn = p.RequireDoubleOptIn.Value
		}
		if p.ConfirmationSubject.Set {
			a.ConfirmationSubject = p.ConfirmationSubject.Value
		}
		if p.ConfirmationBody.Set {
			a.ConfirmationBody = p.ConfirmationBody.Value
		}
		a.UpdatedAt = s.clock.Now()
		if err := updateAudience(ctx, tx, a); err != nil {
			if store.IsUniqueViolation(err) {
				return errAudienceExists(a.Name)
			}
			return err
		}
		return nil
	})
	return a, err
}

// DeleteAudience soft-deletes an audience: its memberships stay on record
// (an unsubscribe among them survives), its name is free again.
func (s *Service) DeleteAudience(ctx context.Context, workspaceID, id string) error {
	found, err := softDeleteAudience(ctx, s.db, workspaceID, id, s.clock.Now())
	if err != nil {
		return err
	}
	if !found {
		return errAudienceNotFound()
	}
	return nil
}

// mentionsConfirmURL reports whether a template names {{ confirm_url }}
// (spaces inside the braces optional).
func mentionsConfirmURL(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, " ", ""), "{{confirm_url}}")
}
