package suppressions

import (
	"context"
	"errors"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/store"
)

// Suppression is one row as the API shows it. Global rows belong to the
// service (WorkspaceID "") and apply to every workspace.
type Suppression struct {
	ID            string
	WorkspaceID   string
	Email         string
	Reason        string
	IsGlobal      bool
	SourceEmailID string // "" when the row was not caused by an email
	CreatedAt     time.Time
}

// Position is where a newest-first listing continues: strictly older than
// (CreatedAt, ID). It mirrors the API's opaque cursor.
type Position struct {
	At int64 // created_at in unix ms
	ID string
}

// Filter narrows a listing. Empty fields match everything.
type Filter struct {
	Reason string // one of the spec's reasons
	Email  string // exact match after Normalize
}

// Service serves the suppression routes: the workspace's rows plus the
// service-wide ones, which a workspace sees but cannot remove.
type Service struct {
	db    *store.DB
	clock clock.Clock
}

// New builds the service.
func New(db *store.DB, c clock.Clock) *Service { return &Service{db: db, clock: c} }

func errBadReason(r string) error {
	return apierr.InvalidRequest("reason %q is not one of bounce, complaint, unsub, manual.", r).
		WithNext("Omit reason to record a manual suppression.")
}

// List returns up to limit rows visible to the workspace (its own and the
// global ones), newest first, continuing after pos when it is not nil, and
// the number of rows matching f regardless of paging.
func (s *Service) List(ctx context.Context, workspaceID string, f Filter, limit int, pos *Position) ([]Suppression, int, error) {
	if f.Reason != "" && !ValidReason(f.Reason) {
		return nil, 0, errBadReason(f.Reason)
	}
	return list(ctx, s.db, workspaceID, f, limit, pos)
}

// Add suppresses email for the workspace by hand (reason "" means manual).
// The address must already be validated; it is stored normalized. When the
// workspace already has a row for the address, that row is returned
// unchanged and created is false: adding is idempotent, the first reason wins.
func (s *Service) Add(ctx context.Context, workspaceID, email, reason string) (sp Suppression, created bool, err error) {
	if workspaceID == globalWorkspace {
		return sp, false, errors.New("suppressions: Add needs a workspace; use AddGlobal for service-wide rows")
	}
	if reason == "" {
		reason = ReasonManual
	}
	if !ValidReason(reason) {
		return sp, false, errBadReason(reason)
	}
	email = Normalize(email)
	if !validEmailish(email) {
		return sp, false, apierr.InvalidRequest("email must be an address such as someone@example.com.")
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		id, inserted, err := addTx(ctx, tx, workspaceID, email, reason, "", s.clock.Now())
		if err != nil {
			return err
		}
		created = inserted
		sp, err = byID(ctx, tx, id)
		return err
	})
	if err != nil {
		return Suppression{}, false, err
	}
	return sp, created, nil
}

// Get returns one of the workspace's own rows. Global rows and other
// workspaces' rows answer not_found.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (Suppression, error) {
	sp, err := ownByID(ctx, s.db, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) || workspaceID == globalWorkspace {
		return Suppression{}, apierr.NotFound("suppression")
	}
	return sp, err
}

// Delete removes one of the workspace's own rows by id. Global rows cannot
// be cleared by a workspace and, like other workspaces' rows, answer
// not_found.
func (s *Service) Delete(ctx context.Context, workspaceID, id string) error {
	if workspaceID == globalWorkspace || id == "" {
		return apierr.NotFound("suppression")
	}
	found, err := deleteOwn(ctx, s.db, workspaceID, id)
	if err != nil {
		return err
	}
	if !found {
		return apierr.NotFound("suppression")
	}
	return nil
}

// DeleteEmail removes the workspace's own row for an address and returns its
// id. A global row for the address stays; with no workspace row the answer
// is not_found.
func (s *Service) DeleteEmail(ctx context.Context, workspaceID, email string) (string, error) {
	email = Normalize(email)
	if workspaceID == globalWorkspace || email == "" {
		return "", apierr.NotFound("suppression")
	}
	var id string
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		id, err = ownID(ctx, tx, workspaceID, email)
		if errors.Is(err, store.ErrNotFound) {
			global, err := globalRows(ctx, tx, email)
			if err != nil {
				return err
			}
			e := apierr.New(apierr.StatusNotFound, "not_found", "No suppression for that address on this workspace.")
			if global > 0 {
				e = e.WithNext("The address is suppressed service-wide (is_global); only the operator can clear that row.")
			}
			return e
		}
		if err != nil {
			return err
		}
		_, err = deleteOwn(ctx, tx, workspaceID, id)
		return err
	})
	return id, err
}

// validEmailish is a cheap guard for the store-level API, which takes
// addresses already parsed by the caller.
func validEmailish(email string) bool {
	at := strings.LastIndexByte(email, '@')
	return at > 0 && at < len(email)-1
}
