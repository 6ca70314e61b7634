// Package workspaces holds workspaces and their API keys. A key is shown
// once; only its SHA-256 is stored. Keys carry 256 random bits, so a fast
// hash is the right tool (there is nothing to brute-force), and a lookup by
// hash followed by a constant-time comparison keeps timing from telling
// anything about stored keys.
package workspaces

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// KeyPrefix starts every API key.
const KeyPrefix = "mr_"

// Scopes the spec defines.
const (
	ScopeSend      = "mail:send"
	ScopeRead      = "mail:read"
	ScopeWorkspace = "workspace"
)

// AllScopes is what a key created without scopes gets.
var AllScopes = []string{ScopeSend, ScopeRead, ScopeWorkspace}

// Workspace is a tenant.
type Workspace struct {
	ID             string
	Name           string
	OwnerEmail     string
	OwnerConfirmed bool
	CreatedAt      time.Time
}

// Key is a stored API key (never its value).
type Key struct {
	ID          string     `json:"id"`
	WorkspaceID string     `json:"-"`
	Name        string     `json:"name"`
	Scopes      []string   `json:"scopes"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	// MailboxID binds the key to one mailbox (its identity): it reads only
	// that mailbox's mail and sends as it. "" for an unbound key.
	MailboxID string `json:"mailbox_id"`
	// MailboxAddress is the bound mailbox's address (kept with the key): the
	// one address the key sends from and reads the emails of.
	MailboxAddress string `json:"-"`
	// DomainID and DomainName restrict a sending key to one domain of the
	// workspace (from addresses at DomainName only); "" for no restriction.
	DomainID   string `json:"domain_id"`
	DomainName string `json:"-"`

	// The workspace's owner, read with the key (one query per request) so
	// that the send path need not read the workspace again.
	OwnerEmail     string `json:"-"`
	OwnerConfirmed bool   `json:"-"`

	// Unconfirmed marks a key answered from a node's memory that may have
	// been revoked since (AuthenticateForSend): the holder must read it
	// again (Confirm) before it answers anything but 401, unless a commit
	// that read the key did so for it.
	Unconfirmed bool `json:"-"`
	confirm     func(context.Context) error
}

// Confirm reads an unconfirmed key again: ErrBadKey when it has been
// revoked. A confirmed key answers nil at once.
func (k *Key) Confirm(ctx context.Context) error {
	if !k.Unconfirmed {
		return nil
	}
	if err := k.confirm(ctx); err != nil {
		return err
	}
	k.Unconfirmed = false
	return nil
}

// HasScope reports whether the key carries scope.
func (k *Key) HasScope(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Grant is what a route or dashboard page asks of a key: every scope in
// Scopes, and, for a key bound to a mailbox, a route that Mailbox marks as
// narrowed to the key's mailbox. Workspace-wide routes (domains, contacts,
// broadcasts, ...) are closed to a bound key: it sees and touches only its
// mailbox (docs/decisions.md).
type Grant struct {
	Scopes  []string
	Mailbox bool
}

// Denied says why the key may not use g: the first scope it lacks, or
// bound when the key is bound to a mailbox and g is workspace-wide. Both
// empty means allowed.
func (k *Key) Denied(g Grant) (scope string, bound bool) {
	for _, sc := range g.Scopes {
		if !k.HasScope(sc) {
			return sc, false
		}
	}
	return "", k.MailboxID != "" && !g.Mailbox
}

// Within reports whether a key with scopes, mailbox and domain asks no more
// than k holds: its scopes a subset of k's, bound to k's mailbox and limited
// to k's domain when k is.
func (k *Key) Within(scopes []string, mailboxID, domainID string) error {
	for _, sc := range scopes {
		if !k.HasScope(sc) {
			return apierr.Forbidden("insufficient_scope", "This API key lacks the %s scope, so it cannot create a key that has it; a new key's scopes are a subset of the creating key's (%s).", sc, strings.Join(k.Scopes, ", "))
		}
	}
	if k.MailboxID != "" && mailboxID != k.MailboxID {
		return apierr.Forbidden("insufficient_scope", "This API key is bound to mailbox %s, so the keys it creates are bound to it too.", k.MailboxID)
	}
	if k.DomainID != "" && domainID != k.DomainID {
		return apierr.Forbidden("insufficient_scope", "This API key may send only from domain %s, so the keys it creates are limited to it too.", k.DomainName)
	}
	return nil
}

// Service manages workspaces and keys.
type Service struct {
	db    *store.DB
	clock clock.Clock

	keys *keyLookup

	mu   sync.Mutex
	used map[string]time.Time // key id -> last use not yet written

	created []func(ctx context.Context, workspaceID string) error
}

// OnCreate registers f to run after a workspace is created (the inbound
// area makes its default mailbox). Register before serving; an error from f
// is CreateWorkspace's error, the workspace itself stays.
func (s *Service) OnCreate(f func(ctx context.Context, workspaceID string) error) {
	s.created = append(s.created, f)
}

// New builds the service.
func New(db *store.DB, c clock.Clock) *Service {
	return &Service{db: db, clock: c, keys: &keyLookup{db: db, epoch: db.KeysEpoch()}, used: map[string]time.Time{}}
}

// CreateWorkspace makes a workspace and its first key (every scope).
func (s *Service) CreateWorkspace(ctx context.Context, name, ownerEmail string, confirmed bool) (*Workspace, string, error) {
	name = strings.TrimSpace(name)
	ownerEmail = strings.TrimSpace(strings.ToLower(ownerEmail))
	if name == "" {
		return nil, "", errors.New("a workspace needs a name")
	}
	if at := strings.LastIndexByte(ownerEmail, '@'); at < 1 || at == len(ownerEmail)-1 || strings.ContainsAny(ownerEmail, " \r\n<>") {
		return nil, "", errors.New("the owner email is not an address")
	}
	w := &Workspace{ID: ids.New("ws"), Name: name, OwnerEmail: ownerEmail, OwnerConfirmed: confirmed, CreatedAt: s.clock.Now()}
	var secret string
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES (?, ?, ?, ?, ?)`,
			w.ID, w.Name, w.OwnerEmail, store.BoolInt(confirmed), store.Millis(w.CreatedAt)); err != nil {
			return err
		}
		var err error
		_, secret, err = s.insertKey(ctx, tx, w.ID, "default", AllScopes, KeyMailbox{}, KeyDomain{})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	for _, f := range s.created {
		if err := f(ctx, w.ID); err != nil {
			return nil, "", err
		}
	}
	return w, secret, nil
}

// Workspace reads one workspace.
func (s *Service) Workspace(ctx context.Context, id string) (*Workspace, error) {
	w := &Workspace{ID: id}
	var confirmed int
	var at int64
	err := s.db.QueryRow(ctx, `SELECT name, owner_email, owner_confirmed, created_at FROM workspaces WHERE id = ?`, id).
		Scan(&w.Name, &w.OwnerEmail, &confirmed, &at)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	w.OwnerConfirmed = confirmed == 1
	w.CreatedAt = store.FromMillis(at)
	return w, nil
}

func hashKey(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func (s *Service) insertKey(ctx context.Context, tx *store.Tx, workspaceID, name string, scopes []string, mailbox KeyMailbox, domain KeyDomain) (*Key, string, error) {
	secret := KeyPrefix + ids.Secret(32)
	k := &Key{ID: ids.New("key"), WorkspaceID: workspaceID, Name: name, Scopes: scopes, MailboxID: mailbox.ID, MailboxAddress: strings.ToLower(mailbox.Address),
		CreatedAt: s.clock.Now(), DomainID: domain.ID, DomainName: strings.ToLower(domain.Name)}
	var mbx, domID, domName any // NULL when unbound
	if mailbox.ID != "" {
		mbx = mailbox.ID
	}
	if domain.ID != "" {
		domID, domName = domain.ID, strings.ToLower(domain.Name)
	}
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, workspace_id, name, scopes, key_hash, key_hint, created_at, mailbox_id, domain_id, domain_name, mailbox_address)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, workspaceID, name, strings.Join(scopes, ","), hashKey(secret), secret[len(secret)-4:], store.Millis(k.CreatedAt), mbx, domID, domName, k.MailboxAddress)
	return k, secret, err
}

// KeyDomain is the domain a sending key is restricted to (zero: none).
type KeyDomain struct{ ID, Name string }

// KeyMailbox is the mailbox a key is bound to (zero: none).
type KeyMailbox struct{ ID, Address string }

// CreateKey validates and stores a new key, returning its value once.
// mailbox, when not zero, binds the key to that mailbox; the caller has
// checked that the mailbox is the workspace's. by is the key that asks
// (nil for Mailroom itself: a sign-in link's session key): the new key
// holds no more than it does.
func (s *Service) CreateKey(ctx context.Context, by *Key, workspaceID, name string, scopes []string, scopesGiven bool, mailbox KeyMailbox) (*Key, string, error) {
	return s.CreateDomainKey(ctx, by, workspaceID, name, scopes, scopesGiven, mailbox, KeyDomain{})
}

// CreateDomainKey is CreateKey for a key restricted to sending from one
// domain (the caller has checked the domain is the workspace's); such a key
// carries mail:send only.
func (s *Service) CreateDomainKey(ctx context.Context, by *Key, workspaceID, name string, scopes []string, scopesGiven bool, mailbox KeyMailbox, domain KeyDomain) (*Key, string, error) {
	if domain.ID != "" && (!scopesGiven || len(scopes) != 1 || scopes[0] != ScopeSend) {
		return nil, "", apierr.InvalidRequest("domain_id restricts a sending key: give it with permission sending_access (or scopes [\"mail:send\"]).")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, "", apierr.InvalidRequest("name is required.")
	}
	if len(name) > 200 {
		return nil, "", apierr.InvalidRequest("name is longer than 200 characters.")
	}
	if scopesGiven && len(scopes) == 0 {
		// An empty list is read as "no access", not "all": a key that can
		// do nothing is never what was meant, and full access would be a
		// silent widening.
		return nil, "", apierr.InvalidRequest("scopes is empty; list at least one of mail:send, mail:read and workspace, or omit scopes for full access.")
	}
	if !scopesGiven {
		scopes = AllScopes
	}
	var clean []string
	for _, sc := range scopes {
		if !slices.Contains(AllScopes, sc) {
			return nil, "", apierr.InvalidRequest("Unknown scope %q; scopes are mail:send, mail:read and workspace.", sc)
		}
		if !slices.Contains(clean, sc) {
			clean = append(clean, sc)
		}
	}
	if by != nil {
		if err := by.Within(clean, mailbox.ID, domain.ID); err != nil {
			return nil, "", err
		}
	}
	var k *Key
	var secret string
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		k, secret, err = s.insertKey(ctx, tx, workspaceID, name, clean, mailbox, domain)
		return err
	})
	return k, secret, err
}

// CreateSessionKey makes the key of a dashboard sign-in link's session:
// every scope, kept apart from the keys people made (ListKeys leaves it
// out, SessionKeys lists it); the dashboard revokes it when the session ends.
func (s *Service) CreateSessionKey(ctx context.Context, workspaceID, name string) (*Key, string, error) {
	var k *Key
	var secret string
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if k, secret, err = s.insertKey(ctx, tx, workspaceID, name, AllScopes, KeyMailbox{}, KeyDomain{}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE api_keys SET session = 1 WHERE id = ?`, k.ID)
		return err
	})
	return k, secret, err
}

// ListKeys returns the workspace's keys, oldest first, without the
// dashboard's session keys; for a caller bound to a mailbox (boundTo), only
// the keys bound to it.
func (s *Service) ListKeys(ctx context.Context, workspaceID, boundTo string) ([]Key, error) {
	return s.listKeys(ctx, workspaceID, boundTo, 0)
}

// SessionKeys lists the keys of the dashboard's sign-in link sessions.
func (s *Service) SessionKeys(ctx context.Context, workspaceID, boundTo string) ([]Key, error) {
	return s.listKeys(ctx, workspaceID, boundTo, 1)
}

func (s *Service) listKeys(ctx context.Context, workspaceID, boundTo string, session int) ([]Key, error) {
	rows, err := s.db.Query(ctx, `SELECT id, name, scopes, created_at, last_used_at, COALESCE(mailbox_id, ''), COALESCE(domain_id, '') FROM api_keys
		WHERE workspace_id = ? AND (? = '' OR mailbox_id = ?) AND session = ? ORDER BY created_at, id`, workspaceID, boundTo, boundTo, session)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Key{}
	for rows.Next() {
		k := Key{WorkspaceID: workspaceID}
		var scopes string
		var at int64
		var used sql.NullInt64
		if err := rows.Scan(&k.ID, &k.Name, &scopes, &at, &used, &k.MailboxID, &k.DomainID); err != nil {
			return nil, err
		}
		k.Scopes = strings.Split(scopes, ",")
		k.CreatedAt = store.FromMillis(at)
		k.LastUsedAt = store.NullMillis(used)
		s.mu.Lock()
		if t, ok := s.used[k.ID]; ok {
			k.LastUsedAt = &t
		}
		s.mu.Unlock()
		out = append(out, k)
	}
	return out, rows.Err()
}

// DeleteKey revokes a key: the row goes, so the very next request with it
// fails. A caller bound to a mailbox (boundTo) finds only keys bound to it.
func (s *Service) DeleteKey(ctx context.Context, workspaceID, boundTo, id string) error {
	res, err := s.db.Exec(ctx, `DELETE FROM api_keys WHERE workspace_id = ? AND id = ? AND (? = '' OR mailbox_id = ?)`, workspaceID, id, boundTo, boundTo)
	if err != nil {
		return err
	}
	// Also when nothing was deleted: a retry of a revocation whose first
	// answer was lost may find the row already gone (see cacheTTL).
	s.keys.revoked()
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.NotFound("API key")
	}
	s.mu.Lock()
	delete(s.used, id)
	s.mu.Unlock()
	return nil
}

// ErrBadKey means the presented key is absent, malformed, wrong or revoked.
var ErrBadKey = apierr.Unauthorized("unauthorized", "Missing, invalid or revoked API key.").
	WithNext("Send Authorization: Bearer <API_KEY> with a key from this workspace.")

// Authenticate resolves a presented key. A revocation on any node is
// effective on the very next request: the key is read from the database
// after the request arrived, or, on SQLite, from a cache that every
// revocation empties before it is answered (see keyLookup).
func (s *Service) Authenticate(ctx context.Context, secret string) (*Key, error) {
	return s.authenticate(ctx, secret, false)
}

// AuthenticateForSend is Authenticate for the send routes. On PostgreSQL it
// may answer a key this node found before without reading the database
// (Key.Unconfirmed): the send's group commit reads the key again in the
// query it makes anyway and refuses the send if the key is gone, and any
// other answer reads it first (sending.Caller.KeyUnconfirmed). That read
// per request was a fifth of a send's cost there. On SQLite it is
// Authenticate.
func (s *Service) AuthenticateForSend(ctx context.Context, secret string) (*Key, error) {
	return s.authenticate(ctx, secret, true)
}

func (s *Service) authenticate(ctx context.Context, secret string, unconfirmed bool) (*Key, error) {
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) < len(KeyPrefix)+40 || len(secret) > 200 {
		return nil, ErrBadKey
	}
	h := hashKey(secret)
	row, fresh, err := s.keys.find(ctx, h, unconfirmed)
	if err != nil {
		return nil, err
	}
	// The lookup matched on the hash; the comparison that decides is the
	// constant-time one.
	if row == nil || subtle.ConstantTimeCompare([]byte(row.hash), []byte(h)) != 1 {
		return nil, ErrBadKey
	}
	k := &Key{ID: row.id, WorkspaceID: row.workspaceID, Name: row.name, MailboxID: row.mailboxID, OwnerEmail: row.ownerEmail, Unconfirmed: !fresh,
		DomainID: row.domainID, DomainName: row.domainName, MailboxAddress: strings.ToLower(row.mailboxAddress)}
	if k.Unconfirmed {
		k.confirm = func(ctx context.Context) error {
			row, _, err := s.keys.find(ctx, h, false)
			if err != nil {
				return err
			}
			if row == nil || row.id != k.ID {
				return ErrBadKey
			}
			return nil
		}
	}
	scopes, at, confirmed := row.scopes, row.createdAt, row.confirmed
	k.Scopes = strings.Split(scopes, ",")
	k.CreatedAt = store.FromMillis(at)
	k.OwnerEmail, k.OwnerConfirmed = strings.ToLower(k.OwnerEmail), confirmed == 1
	s.mu.Lock()
	s.used[k.ID] = s.clock.Now()
	s.mu.Unlock()
	return k, nil
}

// FlushLastUsed writes the coalesced last-use times in one transaction, so
// authentication never writes to the database per request.
func (s *Service) FlushLastUsed(ctx context.Context) error {
	s.mu.Lock()
	pending := s.used
	s.used = map[string]time.Time{}
	s.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		for id, t := range pending {
			if _, err := tx.Exec(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
				store.Millis(t), id, store.Millis(t)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// Put them back so the next flush tries again.
		s.mu.Lock()
		for id, t := range pending {
			if cur, ok := s.used[id]; !ok || cur.Before(t) {
				s.used[id] = t
			}
		}
		s.mu.Unlock()
	}
	return err
}

// RunFlusher flushes last-use times every interval until ctx ends, then once more.
func (s *Service) RunFlusher(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.FlushLastUsed(fctx)
			cancel()
			return
		case <-t.C:
			_ = s.FlushLastUsed(ctx)
		}
	}
}

// LiveKeysQuery is the read the send path folds into its one batch query
// (sending's lookupSuppressions): rows (tag, id, empty, empty) of the keys among
// ids that still exist (revoking deletes the row), with tag a constant
// first column that tells these rows from the other reads of a UNION ALL.
// args gains the ids.
func LiveKeysQuery(tag int, args []any, ids []string) (string, []any) {
	args, in := store.PaddedIn(args, ids)
	return `SELECT ` + strconv.Itoa(tag) + `, id, '', '' FROM api_keys WHERE id IN (` + in + `)`, args
}

// keysByHash reads the keys whose hashes are among hashes, with their
// workspace's owner, by hash.
func keysByHash(ctx context.Context, q store.Querier, hashes []string) (map[string]*keyRow, error) {
	args, in := store.PaddedIn(nil, hashes)
	rows, err := store.QueryAll(ctx, q, func(sc store.Scanner) (*keyRow, error) {
		k := &keyRow{}
		return k, sc.Scan(&k.id, &k.workspaceID, &k.name, &k.scopes, &k.hash, &k.createdAt, &k.ownerEmail, &k.confirmed, &k.mailboxID, &k.domainID, &k.domainName, &k.mailboxAddress)
	}, `SELECT k.id, k.workspace_id, k.name, k.scopes, k.key_hash, k.created_at, w.owner_email, w.owner_confirmed, COALESCE(k.mailbox_id, ''),
		COALESCE(k.domain_id, ''), COALESCE(k.domain_name, ''), k.mailbox_address
		FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE k.key_hash IN (`+in+`)`, args...)
	if err != nil {
		return nil, err
	}
	found := make(map[string]*keyRow, len(rows))
	for _, k := range rows {
		found[k.hash] = k
	}
	return found, nil
}

// WithIDSuffix lists the workspaces whose id ends with suffix (at most
// 20): the inbound side finds the workspace behind a subdomain it has not
// provisioned yet from the id characters the subdomain carries.
func (s *Service) WithIDSuffix(ctx context.Context, suffix string) ([]Workspace, error) {
	if len(suffix) < 4 || strings.ContainsAny(suffix, "%_\\") {
		return nil, nil
	}
	return store.QueryAll(ctx, s.db, func(r store.Scanner) (Workspace, error) {
		var w Workspace
		var confirmed int
		var at int64
		err := r.Scan(&w.ID, &w.Name, &w.OwnerEmail, &confirmed, &at)
		w.OwnerConfirmed, w.CreatedAt = confirmed == 1, store.FromMillis(at)
		return w, err
	}, `SELECT id, name, owner_email, owner_confirmed, created_at FROM workspaces WHERE id LIKE ? ORDER BY id LIMIT 20`, "%"+suffix)
}
