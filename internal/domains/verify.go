package domains

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
)

// checkTimeout bounds the DNS lookups of one domain check.
const checkTimeout = 15 * time.Second

// Verification is the outcome of a verify call: the domain as it now
// stands and every record with whether it was found.
type Verification struct {
	Domain  *Domain
	Records []Checked
}

// Verified reports whether the domain is verified after the check.
func (v *Verification) Verified() bool { return v.Domain.Status == DomainVerified }

// keepsVerified reports whether a verified domain whose nightly check no
// longer finds rec counts a failure: the ownership token (control of the
// zone) and the DKIM keys (mail from it authenticates). A domain verified
// before the bounce subdomain and the DMARC record were required keeps
// sending without them (from its own domain's Return-Path, see
// Service.BounceDomain) until its owner publishes them.
func keepsVerified(rec Record) bool {
	return rec.Record == RecordOwnership || rec.Record == RecordDKIM
}

// Verify looks every record of the domain up now and moves it to verified
// when the required ones are found, raising domain.verified once per
// transition. It is safe to call repeatedly. A domain verified by another
// workspace meanwhile answers 409 domain_taken.
func (s *Service) Verify(ctx context.Context, workspaceID, id string) (*Verification, error) {
	d, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	checked, lookErr, err := s.check(ctx, d, false)
	if err != nil {
		return nil, err
	}
	if lookErr != nil {
		s.log.Warn("domain check: DNS lookups failed", "domain", d.Name, "err", lookErr)
	}
	d, err = s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	// The stored statuses carry the check's outcome; Found comes from it.
	for i := range checked {
		checked[i].Status = d.Records[i].Status
	}
	return &Verification{Domain: d, Records: checked}, nil
}

// check runs the DNS lookups for d and records the result. nightly checks
// also count consecutive failures of verified domains. lookErr holds DNS
// failures, which never demote a domain; err means nothing was stored.
func (s *Service) check(ctx context.Context, d *Domain, nightly bool) (checked []Checked, lookErr, err error) {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	checked, lookErr = CheckAll(cctx, s.resolver, d.Records)
	s.evaluateSPF(cctx, checked)
	s.noteDMARCOverride(cctx, d.Name, checked)
	cancel()
	ok, holds := true, true
	for _, c := range checked {
		if c.Record.Required && !c.Found {
			ok = false
		}
		if keepsVerified(c.Record) && !c.Found {
			holds = false
		}
	}
	if s.cfg.VerifyWithoutDNS {
		ok, holds = true, true
	}
	statuses := make(map[string]string, len(checked))
	for _, c := range checked {
		statuses[statusKey(c.Record)] = c.Status
		if c.Detail != "" {
			statuses[statusKey(c.Record)+detailSuffix] = c.Detail
		}
	}
	statusJSON, _ := json.Marshal(statuses)
	now := s.clock.Now()
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if err := recordChecked(ctx, tx, d.ID, string(statusJSON), now); err != nil {
			return err
		}
		switch {
		case d.Shared:
			// The workspace subdomain sends whatever DNS says (the
			// operator publishes its records); only its records' statuses
			// follow the lookups.
			return nil
		case ok:
			verified, err := markVerified(ctx, tx, d.ID, now)
			if store.IsUniqueViolation(err) {
				return errTaken(d.Name)
			}
			if err != nil {
				return err
			}
			if !verified {
				return resetFailures(ctx, tx, d.ID)
			}
			_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: d.WorkspaceID, Type: events.DomainVerified, CreatedAt: now,
				Data: map[string]any{"domain_id": d.ID, "domain": d.Name}})
			return err
		case nightly && lookErr == nil && d.Status == DomainVerified && !holds:
			return countFailure(ctx, tx, d.ID, s.cfg.FailAfter)
		case d.Status == DomainVerified && holds:
			return resetFailures(ctx, tx, d.ID)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return checked, lookErr, nil
}

// RecheckAll is the nightly pass: every custom domain on every workspace is
// looked up again. Pending and failed domains whose records now resolve
// become verified; verified ones whose required records are missing count a
// failure, and after Config.FailAfter consecutive ones become failed (sends
// then answer domain_not_verified). DNS errors count for nothing. It
// returns how many domains it checked, and only storage errors.
func (s *Service) RecheckAll(ctx context.Context) (int, error) {
	all, err := s.load(ctx, `d.shared = 0 ORDER BY d.created_at, d.id`)
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, 4)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, d := range all {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, lookErr, err := s.check(ctx, d, true)
			switch {
			case apierr.Is(err, "domain_taken"):
				s.log.Info("nightly domain check: verified on another workspace", "domain", d.Name, "workspace", d.WorkspaceID)
			case err != nil:
				errs[i] = err
			case lookErr != nil:
				s.log.Warn("nightly domain check: DNS lookups failed", "domain", d.Name, "err", lookErr)
			}
		})
	}
	wg.Wait()
	return len(all), errors.Join(errs...)
}

// evaluateSPF runs the SPF evaluator at a found SPF record's name (the
// bounce subdomain, which Return-Paths use): anything but
// pass for an outbound address makes it failed, the result and reason in
// its detail. A DNS timeout (temperror) changes nothing.
func (s *Service) evaluateSPF(ctx context.Context, checked []Checked) {
	if s.cfg.SPF == nil {
		return
	}
	for i := range checked {
		c := &checked[i]
		if c.Record.Record != RecordSPF || c.Status == "" {
			continue
		}
		res, detail := s.cfg.SPF.Evaluate(ctx, c.Record.Name)
		switch res {
		case "", SPFTempError:
		case SPFPass:
			c.Detail = ""
		default:
			c.Status, c.Found, c.Detail = StatusFailed, false, "spf "+res+": "+detail
		}
	}
}

// noteDMARCOverride adds a note to the DMARC record of a subdomain when
// publishing it would replace a stricter policy of the organisational
// domain (its sp=, else p=, RFC 7489 section 6.6.3): a record at the
// subdomain wins over the parent's for mail from the subdomain.
func (s *Service) noteDMARCOverride(ctx context.Context, domain string, checked []Checked) {
	org, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil || org == domain {
		return
	}
	txts, err := s.resolver.LookupTXT(ctx, "_dmarc."+org)
	if err != nil {
		return
	}
	parent := ""
	for _, t := range txts {
		if !isDMARC(t) {
			continue
		}
		tg := tags(t)
		parent = strings.ToLower(tg["p"])
		if sp := strings.ToLower(tg["sp"]); sp != "" {
			parent = sp
		}
	}
	if parent != "quarantine" && parent != "reject" {
		return
	}
	for i := range checked {
		c := &checked[i]
		if c.Record.Record != RecordDMARC {
			continue
		}
		ours := strings.ToLower(tags(c.Record.Value)["p"])
		if ours == parent || ours == "reject" || (ours == "quarantine" && parent == "quarantine") {
			continue
		}
		c.Detail = "this record at " + domain + " overrides " + org + "'s DMARC policy (" + parent + ") with p=" + ours +
			" for mail from " + domain + "; publish p=" + parent + " here instead, or no record to keep the parent's"
	}
}
