package domains

import (
	"context"
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/ids"
	"mailroom/internal/secretbox"
	"mailroom/internal/store"
	"mailroom/internal/workspaces"
)

// Verification statuses of a domain. A verified domain whose required
// records stay missing through Config.FailAfter nightly checks becomes
// failed: it can no longer send until it verifies again.
const (
	DomainPending  = "pending"
	DomainVerified = "verified"
	DomainFailed   = "failed"
)

// Config is what the service needs from the installation's configuration.
type Config struct {
	ServiceDomain string       // shared domain; workspace subdomains live under it
	Records       RecordConfig // MX target and SPF mechanisms published for every domain
	// SPF, when set, evaluates a found SPF record for the outbound
	// addresses (see SPFEvaluator); nil checks the mechanisms only.
	SPF *SPFEvaluator
	// TrackingTargets are the host names a custom tracking host's CNAME may
	// point at (track.<service domain>, and the public URL's host).
	TrackingTargets []string
	// SharedTrackingHost is the host links use when a domain has no
	// tracking host of its own.
	SharedTrackingHost string
	Limit              int           // custom domains per workspace; 0 = unlimited
	FailAfter          int           // consecutive failed nightly checks before verified -> failed (default 3)
	RecheckEvery       time.Duration // nightly pass interval (default 24 h)
	// NewKey makes a DKIM key (default GenerateKey). Tests hand in keys
	// made ahead of time (testkit/testkeys): generating RSA-2048 is slow.
	NewKey func() (*rsa.PrivateKey, error)
	// Workspaces names a workspace's own subdomain; nil: the workspaces
	// area over the same database.
	Workspaces Workspaces
	// VerifyWithoutDNS (MAILROOM_OUTBOUND=capture): a domain verifies on
	// its first check whatever DNS says, and never fails a nightly one.
	// No message leaves the node, so no receiver ever checks the records;
	// they are still looked up and shown as found or not.
	VerifyWithoutDNS bool
}

// Workspaces is what domains needs from the workspaces area.
type Workspaces interface {
	Workspace(ctx context.Context, id string) (*workspaces.Workspace, error)
}

// Service manages sending domains: their records, DKIM keys, verification
// against DNS and tracking hosts.
type Service struct {
	db       *store.DB
	box      *secretbox.Box
	clock    clock.Clock
	resolver Lookuper
	cfg      Config
	log      *slog.Logger

	mu   sync.Mutex
	keys map[string]*rsa.PrivateKey // sealed PEM -> parsed key; parsing costs more than a lookup
	svc  *serviceKey

	hooks         testHooks
	mailboxes     MailboxCounter
	trackingHosts sync.Map // workspace "\x00" domain -> trackingHostEntry
}

// testHooks are points inside a critical step where a test can hold the
// code to run a race on purpose (export_test.go sets them); nil in
// production.
type testHooks struct {
	deleteCounted func() // Delete counted no mailbox and has not deleted yet
}

// New builds the service.
func New(db *store.DB, box *secretbox.Box, c clock.Clock, resolver Lookuper, cfg Config, log *slog.Logger) *Service {
	if cfg.FailAfter <= 0 {
		cfg.FailAfter = 3
	}
	if cfg.RecheckEvery <= 0 {
		cfg.RecheckEvery = 24 * time.Hour
	}
	if cfg.NewKey == nil {
		cfg.NewKey = GenerateKey
	}
	if cfg.Workspaces == nil {
		cfg.Workspaces = workspaces.New(db, c)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{db: db, box: box, clock: c, resolver: resolver, cfg: cfg, log: log, keys: map[string]*rsa.PrivateKey{}}
}

// RecheckEvery is the interval of the nightly pass.
func (s *Service) RecheckEvery() time.Duration { return s.cfg.RecheckEvery }

// Domain is a sending domain as the API shows it.
type Domain struct {
	ID          string
	WorkspaceID string
	Name        string
	Status      string
	Shared      bool
	Tracking    *string // custom tracking host; nil = shared host
	Records     []Record
	CreatedAt   time.Time
	VerifiedAt  *time.Time

	token    string
	statuses map[string]string
	failures int
}

// DKIMStatus sums up the DKIM records: verified when all are seen, failed
// when one is published with another key, pending otherwise.
func (d *Domain) DKIMStatus() string { return dkimStatus(d.Records) }

func dkimStatus(recs []Record) string {
	all, failed := true, false
	for _, r := range recs {
		if r.Record != RecordDKIM {
			continue
		}
		all = all && r.Status == StatusVerified
		failed = failed || r.Status == StatusFailed
	}
	switch {
	case all:
		return StatusVerified
	case failed:
		return StatusFailed
	}
	return StatusPending
}

// Errors callers see.
var (
	errNotFound = apierr.NotFound("domain")
)

func errTaken(domain string) *apierr.Error {
	return apierr.Conflict("domain_taken", "%s is verified on another workspace.", domain).
		WithNext("A domain can be verified by one workspace at a time; remove it there first.")
}

func errServiceZone(domain string) *apierr.Error {
	return apierr.Conflict("domain_taken", "%s belongs to the service's own domain.", domain).
		WithNext("Every workspace already has its own subdomain of the service domain; see GET /v1/domains.")
}

// Create adds a custom domain to a workspace, with three fresh DKIM keys
// and an ownership token. The keys are generated before the transaction so
// that no lock is held for the slow part.
func (s *Service) Create(ctx context.Context, workspaceID, input string) (*Domain, error) {
	name, err := Normalize(input)
	if err != nil {
		return nil, err
	}
	if name == s.cfg.ServiceDomain || strings.HasSuffix(name, "."+s.cfg.ServiceDomain) {
		return nil, errServiceZone(name)
	}
	if err := s.canAdd(ctx, s.db, workspaceID, name); err != nil {
		return nil, err
	}
	keys, err := s.generateKeys()
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	d := &Domain{ID: ids.New("dom"), WorkspaceID: workspaceID, Name: name, Status: DomainPending,
		CreatedAt: now, token: ids.Secret(20), statuses: map[string]string{}}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if err := s.canAdd(ctx, tx, workspaceID, name); err != nil {
			return err
		}
		return s.insert(ctx, tx, d, keys)
	})
	if store.IsUniqueViolation(err) {
		return nil, errExists(name)
	}
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, workspaceID, d.ID)
}

func errExists(name string) *apierr.Error {
	return apierr.Conflict("domain_exists", "%s is already on this workspace.", name).
		WithNext("Use GET /v1/domains to find it, or POST /v1/domains/{id}/verify to check its records.")
}

// canAdd applies the create rules that depend on stored rows; it runs once
// before key generation (to fail fast) and again inside the transaction.
func (s *Service) canAdd(ctx context.Context, q store.Querier, workspaceID, name string) error {
	has, taken, custom, err := domainCounts(ctx, q, workspaceID, name)
	if err != nil {
		return err
	}
	if has > 0 {
		return errExists(name)
	}
	if taken > 0 {
		return errTaken(name)
	}
	if s.cfg.Limit > 0 {
		if n := custom; n >= s.cfg.Limit {
			return apierr.PaymentRequired("domain_limit_reached",
				"This workspace already has %d domains, the most this installation allows.", n).
				WithNext("Remove a domain you no longer use, or ask the operator to raise MAILROOM_DOMAIN_LIMIT.")
		}
	}
	return nil
}

// generateKeys makes one RSA key per selector concurrently: each takes
// tens of milliseconds, and a create waits for all three.
func (s *Service) generateKeys() ([3]*rsa.PrivateKey, error) {
	var keys [3]*rsa.PrivateKey
	var errs [3]error
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = s.cfg.NewKey() })
	}
	wg.Wait()
	return keys, errors.Join(errs[:]...)
}

// List returns every domain of the workspace, its own subdomain first
// (created on the first call), then custom domains oldest first.
func (s *Service) List(ctx context.Context, workspaceID string) ([]*Domain, error) {
	if _, err := s.EnsureWorkspaceDomain(ctx, workspaceID); err != nil {
		return nil, err
	}
	return s.load(ctx, `d.workspace_id = ? ORDER BY d.shared DESC, d.created_at, d.id`, workspaceID)
}

// Get returns one domain of the workspace; another workspace's id is not found.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (*Domain, error) {
	ds, err := s.load(ctx, `d.workspace_id = ? AND d.id = ?`, workspaceID, id)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, errNotFound
	}
	return ds[0], nil
}

// Delete removes a custom domain and its keys. Domains with mailboxes and
// the workspace's own subdomain stay.
func (s *Service) Delete(ctx context.Context, workspaceID, id string) error {
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		shared, err := isShared(ctx, tx, workspaceID, id)
		if isNoRows(err) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		if shared {
			return apierr.Conflict("workspace_domain_protected", "The workspace's own subdomain of the service domain cannot be removed.").
				WithNext("Only custom domains added with POST /v1/domains can be deleted.")
		}
		n, err := s.countMailboxes(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if n > 0 {
			return domainInUse(n)
		}
		if h := s.hooks.deleteCounted; h != nil {
			h()
		}
		return deleteDomain(ctx, tx, workspaceID, id)
	})
	if err == nil {
		s.forgetTrackingHosts(workspaceID)
	}
	if store.IsForeignKeyViolation(err) {
		// A mailbox was created on the domain after the count above
		// (PostgreSQL; see migration 00008): count again, now it is there.
		n, cerr := s.countMailboxes(ctx, s.db, workspaceID, id)
		if cerr != nil {
			return cerr
		}
		return domainInUse(n)
	}
	return err
}

// MailboxCounter counts the mailboxes on a domain: the inbound area, which
// owns mailboxes (and imports domains, so it is handed in).
type MailboxCounter interface {
	CountOnDomain(ctx context.Context, q store.Querier, workspaceID, domainID string) (int, error)
}

// SetMailboxes hands in the inbound area once it is built; call before serving.
func (s *Service) SetMailboxes(m MailboxCounter) { s.mailboxes = m }

func (s *Service) countMailboxes(ctx context.Context, q store.Querier, workspaceID, domainID string) (int, error) {
	if s.mailboxes == nil {
		return 0, errors.New("domains: no mailbox counter wired")
	}
	return s.mailboxes.CountOnDomain(ctx, q, workspaceID, domainID)
}

func domainInUse(n int) error {
	return apierr.Conflict("domain_in_use", "The domain has %d mailboxes.", n).With("mailboxes", n).
		WithNext("Remove its mailboxes first.")
}

// records rebuilds d's records from the current configuration and keys and
// overlays what the last check saw for records whose value did not change.
func (s *Service) records(d *Domain, keys []KeySet) []Record {
	recs := BuildRecords(d.Name, s.cfg.Records, keys, d.token)
	for i := range recs {
		// The workspace subdomain's records too are verified only once a
		// check saw them in DNS (pending until then).
		if st, ok := d.statuses[statusKey(recs[i])]; ok {
			recs[i].Status = st
		}
		recs[i].Detail = d.statuses[statusKey(recs[i])+detailSuffix]
	}
	return recs
}

func statusKey(r Record) string { return r.Record + "|" + r.Name + "|" + r.Value }

// detailSuffix marks, in the stored status map, a record's detail (why it
// failed) beside its status.
const detailSuffix = "|detail"

// SendingStatus tells sending whether the workspace may send from domain:
// "verified", "pending" (added but not, or no longer, verified) or "" when
// the workspace does not have it.
func (s *Service) SendingStatus(ctx context.Context, workspaceID, domain string) (string, error) {
	name, err := Normalize(domain)
	if err != nil {
		return "", nil
	}
	status, err := verificationStatus(ctx, s.db, workspaceID, name)
	if isNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if status == DomainVerified {
		return DomainVerified, nil
	}
	return DomainPending, nil
}

// SigningKey returns the active DKIM selector and key of a verified domain
// of the workspace; store.ErrNotFound when there is none.
func (s *Service) SigningKey(ctx context.Context, workspaceID, domain string) (string, crypto.Signer, error) {
	name, err := Normalize(domain)
	if err != nil {
		return "", nil, store.ErrNotFound
	}
	selector, sealed, err := activeKey(ctx, s.db, workspaceID, name)
	if isNoRows(err) {
		return "", nil, store.ErrNotFound
	}
	if err != nil {
		return "", nil, err
	}
	key, err := s.openKey(sealed)
	if err != nil {
		return "", nil, fmt.Errorf("DKIM key of %s: %w", name, err)
	}
	return selector, key, nil
}

// ReturnPathDomain is the Return-Path domain of mail from a verified
// domain of the workspace: its bounce subdomain once the subdomain's MX was
// found, else the domain itself (a domain verified before the bounce
// subdomain existed keeps its bounces coming until its owner publishes
// it). The workspace subdomain is ours and is its own.
func (s *Service) ReturnPathDomain(ctx context.Context, workspaceID, domain string) (string, error) {
	name, err := Normalize(domain)
	if err != nil {
		return domain, nil
	}
	ds, err := s.load(ctx, `d.workspace_id = ? AND d.domain = ? AND d.shared = 0`, workspaceID, name)
	if err != nil || len(ds) == 0 {
		return name, err
	}
	bounces := BounceDomain(name)
	for _, r := range ds[0].Records {
		if r.Record == RecordMX && r.Name == bounces && r.Status == StatusVerified {
			return bounces, nil
		}
	}
	return name, nil
}

func (s *Service) openKey(sealed string) (*rsa.PrivateKey, error) {
	s.mu.Lock()
	k, ok := s.keys[sealed]
	s.mu.Unlock()
	if ok {
		return k, nil
	}
	pemBytes, err := s.box.Open(sealed)
	if err != nil {
		return nil, err
	}
	k, err = ParsePrivateKey(pemBytes)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.keys[sealed] = k
	s.mu.Unlock()
	return k, nil
}
