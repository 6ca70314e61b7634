package domains

import (
	"context"
	"crypto"
	"crypto/rsa"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

func isNoRows(err error) bool { return errors.Is(err, store.ErrNotFound) }

// insert writes a domain and its keys; the first selector's key is active.
func (s *Service) insert(ctx context.Context, tx *store.Tx, d *Domain, keys [3]*rsa.PrivateKey) error {
	statuses, _ := json.Marshal(d.statuses)
	if _, err := tx.Exec(ctx, `INSERT INTO domains (id, workspace_id, domain, verification_status, shared, ownership_token,
		record_status, verified_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.WorkspaceID, d.Name, d.Status, store.BoolInt(d.Shared), d.token, string(statuses), store.MillisOrNull(d.VerifiedAt), store.Millis(d.CreatedAt)); err != nil {
		return err
	}
	for i, sel := range DKIMSelectors() {
		sealed, err := s.box.Seal(MarshalPrivateKey(keys[i]))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO domain_keys (domain_id, selector, private_key, public_value, active, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, d.ID, sel, sealed, DKIMRecordValue(&keys[i].PublicKey), store.BoolInt(i == 0), store.Millis(d.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// load reads domains matching where (on alias d) with their public keys.
func (s *Service) load(ctx context.Context, where string, args ...any) ([]*Domain, error) {
	rows, err := s.db.Query(ctx, `SELECT d.id, d.workspace_id, d.domain, d.verification_status, d.shared, d.ownership_token,
		d.tracking_host, d.record_status, d.check_failures, d.verified_at, d.created_at FROM domains d WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	var out []*Domain
	byID := map[string]*Domain{}
	for rows.Next() {
		d := &Domain{}
		var shared int
		var tracking sql.NullString
		var statuses string
		var verified sql.NullInt64
		var created int64
		if err := rows.Scan(&d.ID, &d.WorkspaceID, &d.Name, &d.Status, &shared, &d.token, &tracking, &statuses,
			&d.failures, &verified, &created); err != nil {
			rows.Close()
			return nil, err
		}
		d.Shared = shared == 1
		if tracking.Valid {
			d.Tracking = &tracking.String
		}
		_ = json.Unmarshal([]byte(statuses), &d.statuses)
		d.VerifiedAt = store.NullMillis(verified)
		d.CreatedAt = store.FromMillis(created)
		out = append(out, d)
		byID[d.ID] = d
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	keys := map[string][]KeySet{}
	domainIDs := make([]string, len(out))
	for i, d := range out {
		domainIDs[i] = d.ID
	}
	// In chunks: the nightly recheck loads every domain of the service.
	for chunk := range slices.Chunk(domainIDs, 512) {
		if err := s.loadKeys(ctx, chunk, keys); err != nil {
			return nil, err
		}
	}
	for _, d := range out {
		d.Records = s.records(d, keys[d.ID])
	}
	return out, nil
}

// loadKeys adds the public keys of the domains domainIDs to keys.
func (s *Service) loadKeys(ctx context.Context, domainIDs []string, keys map[string][]KeySet) error {
	args, in := store.PaddedIn(nil, domainIDs)
	rows, err := s.db.Query(ctx, `SELECT domain_id, selector, public_value FROM domain_keys WHERE domain_id IN (`+in+`) ORDER BY domain_id, selector`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var k KeySet
		if err := rows.Scan(&id, &k.Selector, &k.PublicValue); err != nil {
			return err
		}
		keys[id] = append(keys[id], k)
	}
	return rows.Err()
}

// WorkspaceDomainName is the workspace's own subdomain of the service
// domain: a slug of the workspace name and the last eight (random)
// characters of its id, so it is readable and does not collide.
func WorkspaceDomainName(workspaceID, workspaceName, serviceDomain string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(workspaceName) {
		if b.Len() >= 30 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "ws"
	}
	suffix := workspaceID
	if _, after, ok := strings.Cut(workspaceID, "_"); ok {
		suffix = after
	}
	suffix = strings.ToLower(suffix)
	// The last eight characters: the id's first ones are its creation
	// time, alike for workspaces made within 256 ms of each other.
	if len(suffix) > 8 {
		suffix = suffix[len(suffix)-8:]
	}
	return slug + "-" + suffix + "." + serviceDomain
}

// EnsureWorkspaceDomain returns the workspace's own subdomain, creating it
// on first use. It is safe to call from several nodes at once: the loser of
// the insert race reads the winner's row. Workspace creation may call it
// as a hook; GET /v1/domains calls it lazily.
func (s *Service) EnsureWorkspaceDomain(ctx context.Context, workspaceID string) (*Domain, error) {
	if d, err := s.loadShared(ctx, workspaceID); err == nil || !errors.Is(err, store.ErrNotFound) {
		return d, err
	}
	ws, err := s.cfg.Workspaces.Workspace(ctx, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", workspaceID, err)
	}
	wsName := ws.Name
	keys, err := s.generateKeys()
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	d := &Domain{ID: ids.New("dom"), WorkspaceID: workspaceID, Name: WorkspaceDomainName(workspaceID, wsName, s.cfg.ServiceDomain),
		Status: DomainVerified, Shared: true, CreatedAt: now, VerifiedAt: &now, token: ids.Secret(20), statuses: map[string]string{}}
	err = s.db.InTx(ctx, func(tx *store.Tx) error { return s.insert(ctx, tx, d, keys) })
	if err != nil && !store.IsUniqueViolation(err) {
		return nil, err
	}
	return s.loadShared(ctx, workspaceID)
}

func (s *Service) loadShared(ctx context.Context, workspaceID string) (*Domain, error) {
	ds, err := s.load(ctx, `d.workspace_id = ? AND d.shared = 1`, workspaceID)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, store.ErrNotFound
	}
	return ds[0], nil
}

// ServiceKeySelector is the selector of the service domain's DKIM key.
const ServiceKeySelector = "mr1"

type serviceKey struct {
	domain string
	key    *rsa.PrivateKey
}

// ServiceKey returns the service domain's DKIM key, used for mail from the
// sandbox sender and to the test addresses. The first node to need it
// generates it; a unique key on the domain settles races between nodes, and
// every node then uses the stored one. The public record to publish is
// logged when the key is made.
func (s *Service) ServiceKey(ctx context.Context) (string, string, crypto.Signer, error) {
	s.mu.Lock()
	cached := s.svc
	s.mu.Unlock()
	if cached != nil {
		return cached.domain, ServiceKeySelector, cached.key, nil
	}
	domain := s.cfg.ServiceDomain
	read := func() (string, error) {
		var sealed string
		err := s.db.QueryRow(ctx, `SELECT private_key FROM service_keys WHERE domain = ?`, domain).Scan(&sealed)
		return sealed, err
	}
	sealed, err := read()
	if isNoRows(err) {
		key, gerr := s.cfg.NewKey()
		if gerr != nil {
			return "", "", nil, gerr
		}
		newSealed, serr := s.box.Seal(MarshalPrivateKey(key))
		if serr != nil {
			return "", "", nil, serr
		}
		public := DKIMRecordValue(&key.PublicKey)
		res, ierr := s.db.Exec(ctx, `INSERT INTO service_keys (domain, selector, private_key, public_value, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (domain) DO NOTHING`, domain, ServiceKeySelector, newSealed, public, store.Millis(s.clock.Now()))
		if ierr != nil {
			return "", "", nil, ierr
		}
		if n, _ := res.RowsAffected(); n == 1 {
			s.log.Info("generated the service domain's DKIM key; publish it",
				"name", ServiceKeySelector+"._domainkey."+domain, "type", "TXT", "value", public)
		}
		sealed, err = read()
	}
	if err != nil {
		return "", "", nil, err
	}
	key, err := s.openKey(sealed)
	if err != nil {
		return "", "", nil, fmt.Errorf("service DKIM key: %w", err)
	}
	s.mu.Lock()
	s.svc = &serviceKey{domain: domain, key: key}
	s.mu.Unlock()
	return domain, ServiceKeySelector, key, nil
}

// domainCounts answers canAdd's three questions in one read: does the
// workspace have name, has another workspace verified it, and how many
// custom domains does the workspace have.
func domainCounts(ctx context.Context, q store.Querier, workspaceID, name string) (has, taken, custom int, err error) {
	err = q.QueryRow(ctx, `SELECT
		(SELECT COUNT(*) FROM domains WHERE workspace_id = ? AND domain = ?),
		(SELECT COUNT(*) FROM domains WHERE domain = ? AND verification_status = 'verified' AND workspace_id <> ?),
		(SELECT COUNT(*) FROM domains WHERE workspace_id = ? AND shared = 0)`,
		workspaceID, name, name, workspaceID, workspaceID).Scan(&has, &taken, &custom)
	return has, taken, custom, err
}

// isShared tells whether the domain is the workspace's own subdomain of the
// service domain; store.ErrNotFound when the workspace has no such domain.
func isShared(ctx context.Context, q store.Querier, workspaceID, id string) (bool, error) {
	var shared int
	err := q.QueryRow(ctx, `SELECT shared FROM domains WHERE workspace_id = ? AND id = ?`, workspaceID, id).Scan(&shared)
	return shared == 1, err
}

// deleteDomain removes a domain and its keys.
func deleteDomain(ctx context.Context, tx *store.Tx, workspaceID, id string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM domain_keys WHERE domain_id = ?`, id); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM domains WHERE workspace_id = ? AND id = ?`, workspaceID, id)
	return err
}

// verificationStatus reads a domain's verification status by name, or
// store.ErrNotFound.
func verificationStatus(ctx context.Context, q store.Querier, workspaceID, name string) (string, error) {
	var status string
	err := q.QueryRow(ctx, `SELECT verification_status FROM domains WHERE workspace_id = ? AND domain = ?`, workspaceID, name).Scan(&status)
	return status, err
}

// activeKey reads the active DKIM selector and sealed key of a verified
// domain, or store.ErrNotFound.
func activeKey(ctx context.Context, q store.Querier, workspaceID, name string) (selector, sealed string, err error) {
	err = q.QueryRow(ctx, `SELECT k.selector, k.private_key FROM domains d JOIN domain_keys k ON k.domain_id = d.id AND k.active = 1
		WHERE d.workspace_id = ? AND d.domain = ? AND d.verification_status = 'verified'`, workspaceID, name).Scan(&selector, &sealed)
	return selector, sealed, err
}

// setTrackingHost sets a domain's tracking host (nil clears it).
func setTrackingHost(ctx context.Context, q store.Querier, workspaceID, id string, host any) error {
	_, err := q.Exec(ctx, `UPDATE domains SET tracking_host = ? WHERE workspace_id = ? AND id = ?`, host, workspaceID, id)
	return err
}

// recordChecked stores what a check saw of each record.
func recordChecked(ctx context.Context, tx *store.Tx, id, statusJSON string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE domains SET record_status = ?, checked_at = ? WHERE id = ?`, statusJSON, store.Millis(now), id)
	return err
}

// markVerified verifies a domain not yet verified; false when it already
// was. A unique violation means another workspace verified the name first.
func markVerified(ctx context.Context, tx *store.Tx, id string, now time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE domains SET verification_status = 'verified', verified_at = ?, check_failures = 0
		WHERE id = ? AND verification_status <> 'verified'`, store.Millis(now), id))
}

// resetFailures clears a verified domain's count of failed nightly checks.
func resetFailures(ctx context.Context, tx *store.Tx, id string) error {
	_, err := tx.Exec(ctx, `UPDATE domains SET check_failures = 0 WHERE id = ?`, id)
	return err
}

// countFailure counts a failed nightly check of a verified domain, which
// fails once failAfter checks in a row have.
func countFailure(ctx context.Context, tx *store.Tx, id string, failAfter int) error {
	_, err := tx.Exec(ctx, `UPDATE domains SET check_failures = check_failures + 1,
		verification_status = CASE WHEN check_failures + 1 >= ? THEN 'failed' ELSE verification_status END
		WHERE id = ? AND verification_status = 'verified'`, failAfter, id)
	return err
}

// trackingHost reads the custom tracking host of the workspace's sending
// domain, "" when it has none.
func trackingHost(ctx context.Context, q store.Querier, workspaceID, domain string) (string, error) {
	var host sql.NullString
	err := q.QueryRow(ctx, `SELECT tracking_host FROM domains WHERE workspace_id = ? AND domain = ?`, workspaceID, domain).Scan(&host)
	if isNoRows(err) {
		return "", nil
	}
	return host.String, err
}
