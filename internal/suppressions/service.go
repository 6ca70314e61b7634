package suppressions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

const columns = `id, workspace_id, email, reason, is_global, source_email_id, created_at`

func scan(sc interface{ Scan(...any) error }) (Suppression, error) {
	var s Suppression
	var global int
	var src sql.NullString
	var created int64
	if err := sc.Scan(&s.ID, &s.WorkspaceID, &s.Email, &s.Reason, &global, &src, &created); err != nil {
		return s, err
	}
	s.IsGlobal = global != 0 || s.WorkspaceID == globalWorkspace
	s.SourceEmailID = src.String
	s.CreatedAt = store.FromMillis(created)
	return s, nil
}

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
	where := `workspace_id IN (?, '')`
	args := []any{workspaceID}
	if f.Reason != "" {
		where += ` AND reason = ?`
		args = append(args, f.Reason)
	}
	if f.Email != "" {
		where += ` AND email = ?`
		args = append(args, Normalize(f.Email))
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM suppressions WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("counting suppressions: %w", err)
	}
	if pos != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
	}
	args = append(args, limit)
	rows, err := s.db.Query(ctx, `SELECT `+columns+` FROM suppressions WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("listing suppressions: %w", err)
	}
	defer rows.Close()
	out := make([]Suppression, 0, limit)
	for rows.Next() {
		sp, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, sp)
	}
	return out, total, rows.Err()
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
		sp, err = scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM suppressions WHERE id = ?`, id))
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
	sp, err := scan(s.db.QueryRow(ctx, `SELECT `+columns+` FROM suppressions WHERE id = ? AND workspace_id = ?`, id, workspaceID))
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
	res, err := s.db.Exec(ctx, `DELETE FROM suppressions WHERE id = ? AND workspace_id = ?`, id, workspaceID)
	if err != nil {
		return fmt.Errorf("deleting suppression: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
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
		err := tx.QueryRow(ctx, `SELECT id FROM suppressions WHERE workspace_id = ? AND email = ?`, workspaceID, email).Scan(&id)
		if errors.Is(err, store.ErrNotFound) {
			var global int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM suppressions WHERE workspace_id = '' AND email = ?`, email).Scan(&global); err != nil {
				return err
			}
			e := apierr.New(404, "not_found", "No suppression for that address on this workspace.")
			if global > 0 {
				e = e.WithNext("The address is suppressed service-wide (is_global); only the operator can clear that row.")
			}
			return e
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM suppressions WHERE id = ?`, id)
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
