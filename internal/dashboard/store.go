package dashboard

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"mailroom/internal/contacts"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
)

// All of the dashboard's SQL: its tables dashboard_links and
// dashboard_sessions (migration 00063), dashboard_imports (00068) and
// dashboard_uploads (00081).
// Tokens are stored as hashes only.

// hashToken is the stored form of a link's or a cookie's token: 256 random
// bits need no slow hash, and a database read tells nothing usable.
func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func insertLink(ctx context.Context, db *store.DB, hash, workspaceID string, now, expires time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO dashboard_links (id, workspace_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		hash, workspaceID, store.Millis(now), store.Millis(expires))
	return err
}

// useLink marks an unused, unexpired link used and returns its workspace;
// "" when there is no such link (or it was used or expired): the UPDATE
// decides, so two redemptions racing cannot both win.
func useLink(ctx context.Context, db *store.DB, hash string, now time.Time) (string, error) {
	var ws string
	err := db.InTx(ctx, func(tx *store.Tx) error {
		ok, err := store.Changed(tx.Exec(ctx, `UPDATE dashboard_links SET used_at = ? WHERE id = ? AND used_at IS NULL AND expires_at > ?`,
			store.Millis(now), hash, store.Millis(now)))
		if err != nil || !ok {
			return err
		}
		return tx.QueryRow(ctx, `SELECT workspace_id FROM dashboard_links WHERE id = ?`, hash).Scan(&ws)
	})
	return ws, err
}

// sessionRow is a stored session.
type sessionRow struct {
	hash, workspaceID, keyID, sealedKey, csrf string
	ownedKey                                  bool
	expiresAt                                 time.Time
}

func insertSession(ctx context.Context, db *store.DB, s sessionRow, now time.Time) error {
	owned := 0
	if s.ownedKey {
		owned = 1
	}
	_, err := db.Exec(ctx, `INSERT INTO dashboard_sessions (id, workspace_id, key_id, sealed_key, owned_key, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.hash, s.workspaceID, s.keyID, s.sealedKey, owned, s.csrf, store.Millis(now), store.Millis(s.expiresAt))
	return err
}

// findSession reads an unexpired session by its hash; nil when none.
func findSession(ctx context.Context, db *store.DB, hash string, now time.Time) (*sessionRow, error) {
	s := &sessionRow{hash: hash}
	var owned int
	var exp int64
	err := db.QueryRow(ctx, `SELECT workspace_id, key_id, sealed_key, owned_key, csrf, expires_at FROM dashboard_sessions WHERE id = ? AND expires_at > ?`,
		hash, store.Millis(now)).Scan(&s.workspaceID, &s.keyID, &s.sealedKey, &owned, &s.csrf, &exp)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.ownedKey, s.expiresAt = owned == 1, store.FromMillis(exp)
	return s, nil
}

func deleteSession(ctx context.Context, db *store.DB, hash string) error {
	_, err := db.Exec(ctx, `DELETE FROM dashboard_sessions WHERE id = ?`, hash)
	return err
}

// expiredOwned lists up to limit expired sessions whose key was made for
// them, so that their keys are revoked with them.
func expiredOwned(ctx context.Context, db *store.DB, now time.Time, limit int) ([]sessionRow, error) {
	return store.QueryAll(ctx, db, func(sc store.Scanner) (sessionRow, error) {
		var s sessionRow
		return s, sc.Scan(&s.hash, &s.workspaceID, &s.keyID)
	}, `SELECT id, workspace_id, key_id FROM dashboard_sessions WHERE expires_at <= ? AND owned_key = 1 LIMIT ?`, store.Millis(now), limit)
}

// deleteExpired drops sessions and links past their time (links a day
// after, so that a late redemption still finds "used or expired").
func deleteExpired(ctx context.Context, db *store.DB, now time.Time) error {
	if _, err := db.Exec(ctx, `DELETE FROM dashboard_sessions WHERE expires_at <= ? AND owned_key = 0`, store.Millis(now)); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `DELETE FROM dashboard_uploads WHERE expires_at <= ?`, store.Millis(now)); err != nil {
		return err
	}
	_, err := db.Exec(ctx, `DELETE FROM dashboard_links WHERE expires_at <= ?`, store.Millis(now.Add(-24*time.Hour)))
	return err
}

// importJob is a dashboard_imports row (migration 00068).
type importJob struct {
	ID, WorkspaceID, AudienceID, Filename string
	Rows                                  int
	DryRun                                bool
	Status                                string // importRunning, importDone, importFailed
	Report                                *contacts.ImportResult
	Problem                               string
	CreatedAt                             time.Time
	FinishedAt                            *time.Time
}

const (
	importRunning = "running"
	importDone    = "done"
	importFailed  = "failed"
)

// addImport commits an import's row, its parsed rows and the job that
// runs it in tx: once the answer is given, the import is run, on this node
// or another, after a crash too.
func addImport(ctx context.Context, tx *store.Tx, j importJob, rowsJSON []byte) error {
	if _, err := tx.Exec(ctx, `INSERT INTO dashboard_imports (id, workspace_id, audience_id, filename, row_count, dry_run, status, rows_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.WorkspaceID, j.AudienceID, j.Filename, j.Rows, store.BoolInt(j.DryRun), j.Status, string(rowsJSON), store.Millis(j.CreatedAt)); err != nil {
		return err
	}
	tx.AddJob(jobs.DashboardImportArgs{ImportID: j.ID, WorkspaceID: j.WorkspaceID})
	return nil
}

// pendingImport reads a running import and its rows; nil when it is not
// running any more (a job run again after the import ended).
func pendingImport(ctx context.Context, db *store.DB, workspaceID, id string) (*importJob, []contacts.ImportRow, error) {
	j, err := importByID(ctx, db, workspaceID, id)
	if err != nil || j == nil || j.Status != importRunning {
		return nil, nil, err
	}
	var raw string
	if err := db.QueryRow(ctx, `SELECT rows_json FROM dashboard_imports WHERE id = ?`, id).Scan(&raw); err != nil {
		return nil, nil, err
	}
	var rows []contacts.ImportRow
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		return nil, nil, err
	}
	return j, rows, nil
}

// finishImport records a running import's outcome: its report, or why it
// failed.
func finishImport(ctx context.Context, db *store.DB, id string, res *contacts.ImportResult, problem string, now time.Time) error {
	status, report := importFailed, sql.NullString{}
	if res != nil {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		status, report = importDone, sql.NullString{String: string(b), Valid: true}
	}
	_, err := db.Exec(ctx, `UPDATE dashboard_imports SET status = ?, report = ?, problem = ?, finished_at = ?, rows_json = '[]' WHERE id = ? AND status = ?`,
		status, report, problem, store.Millis(now), id, importRunning)
	return err
}

// importByID reads one of the workspace's imports; nil when it has none
// by that id.
func importByID(ctx context.Context, db *store.DB, workspaceID, id string) (*importJob, error) {
	j := &importJob{ID: id, WorkspaceID: workspaceID}
	var dry int
	var report, problem sql.NullString
	var created int64
	var finished sql.NullInt64
	err := db.QueryRow(ctx, `SELECT audience_id, filename, row_count, dry_run, status, report, problem, created_at, finished_at FROM dashboard_imports WHERE id = ? AND workspace_id = ?`,
		id, workspaceID).Scan(&j.AudienceID, &j.Filename, &j.Rows, &dry, &j.Status, &report, &problem, &created, &finished)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j.DryRun, j.Problem, j.CreatedAt, j.FinishedAt = dry == 1, problem.String, store.FromMillis(created), store.NullMillis(finished)
	if report.Valid {
		j.Report = &contacts.ImportResult{}
		if err := json.Unmarshal([]byte(report.String), j.Report); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// upload is a dashboard_uploads row (migration 00081): a CSV file kept
// between the import's steps.
type upload struct {
	ID, WorkspaceID, SessionID, AudienceID, Filename string
	Content                                          []byte
}

// uploadsKept is how many uploads a session keeps: an older one goes when
// another is made, so that one session holds at most this many files.
const uploadsKept = 3

// insertUpload stores u until expires, dropping expired uploads and the
// session's oldest beyond uploadsKept.
func insertUpload(ctx context.Context, db *store.DB, u upload, now, expires time.Time) error {
	return db.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM dashboard_uploads WHERE expires_at <= ?`, store.Millis(now)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM dashboard_uploads WHERE session_id = ? AND id NOT IN (SELECT id FROM dashboard_uploads WHERE session_id = ? ORDER BY created_at DESC, id LIMIT ?)`,
			u.SessionID, u.SessionID, uploadsKept-1); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO dashboard_uploads (id, workspace_id, session_id, audience_id, filename, content, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			u.ID, u.WorkspaceID, u.SessionID, u.AudienceID, u.Filename, string(u.Content), store.Millis(now), store.Millis(expires))
		return err
	})
}

// uploadByID reads an unexpired upload of the session in its workspace;
// nil when there is none (another session's, or gone).
func uploadByID(ctx context.Context, db *store.DB, workspaceID, sessionID, id string, now time.Time) (*upload, error) {
	u := &upload{ID: id, WorkspaceID: workspaceID, SessionID: sessionID}
	var content string
	err := db.QueryRow(ctx, `SELECT audience_id, filename, content FROM dashboard_uploads WHERE id = ? AND workspace_id = ? AND session_id = ? AND expires_at > ?`,
		id, workspaceID, sessionID, store.Millis(now)).Scan(&u.AudienceID, &u.Filename, &content)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u.Content = []byte(content)
	return u, nil
}

// insertImportOf starts the import of an upload (insertImport) and deletes
// the upload in the same transaction: a file is imported once.
func insertImportOf(ctx context.Context, db *store.DB, j importJob, rows []contacts.ImportRow, uploadID string) error {
	b, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	return db.InTx(ctx, func(tx *store.Tx) error {
		ok, err := store.Changed(tx.Exec(ctx, `DELETE FROM dashboard_uploads WHERE id = ?`, uploadID))
		if err != nil {
			return err
		}
		if !ok { // imported meanwhile, by a second click
			return errNotFound("upload")
		}
		return addImport(ctx, tx, j, b)
	})
}
