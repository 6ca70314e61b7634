package contacts

import (
	"context"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// ImportRecord is one import kept with its counts (the Resend SDKs'
// contacts.imports): an import runs whole in its request, so it is
// recorded completed.
type ImportRecord struct {
	ID          string
	WorkspaceID string
	AudienceID  string // "" for contacts alone
	Status      string
	// Total rows; created and updated contacts (or memberships, in an
	// audience); skipped: repeated addresses; failed: refused rows.
	Total, Created, Updated, Skipped, Failed int
	CreatedAt                                time.Time
	CompletedAt                              *time.Time
	Result                                   ImportResult // the import's own answer; only on the create
}

// ImportCompleted is the status of a recorded import.
const ImportCompleted = "completed"

// MaxImportsListed caps a list of imports (newest first).
const MaxImportsListed = 100

// ImportRecorded runs Import (not dry) and records it with an id that
// Imports and ImportByID read back.
func (s *Service) ImportRecorded(ctx context.Context, workspaceID, audienceID string, rows []ImportRow) (ImportRecord, error) {
	res, err := s.Import(ctx, workspaceID, audienceID, rows, false)
	if err != nil {
		return ImportRecord{}, err
	}
	now := s.clock.Now()
	rec := ImportRecord{ID: ids.New("imp"), WorkspaceID: workspaceID, AudienceID: audienceID, Status: ImportCompleted,
		Created: res.Created, Updated: res.Updated + res.Unchanged + res.HeldBack, Skipped: res.Duplicates, Failed: res.Skipped,
		CreatedAt: now, CompletedAt: &now, Result: res}
	rec.Total = rec.Created + rec.Updated + rec.Skipped + rec.Failed
	return rec, insertImport(ctx, s.db, rec)
}

// Imports lists the workspace's imports, newest first.
func (s *Service) Imports(ctx context.Context, workspaceID string) ([]ImportRecord, error) {
	return listImports(ctx, s.db, workspaceID, MaxImportsListed)
}

// ImportByID reads one recorded import.
func (s *Service) ImportByID(ctx context.Context, workspaceID, id string) (ImportRecord, error) {
	rec, err := importByID(ctx, s.db, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return rec, apierr.NotFound("import")
	}
	return rec, err
}
