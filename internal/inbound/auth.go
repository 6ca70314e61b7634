package inbound

import (
	"context"
	"errors"
	"strings"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/authres"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-msgauth/dmarc"

	"mailroom/internal/mailauth"
	"mailroom/internal/smtpin"
)

// Results of one check as the auth block reports them.
const (
	authPass = "pass"
	authFail = "fail"
	authNone = "none"
)

// authOutcome is what authenticate decided: the auth block, the
// Authentication-Results value (RFC 8601) and the DMARC policy that
// applied ("" when there is no DMARC record), which the spam verdict uses.
type authOutcome struct {
	Auth        Auth
	Header      string
	DMARCPolicy string
}

// authenticate evaluates SPF (RFC 7208) for the connecting IP and the MAIL
// FROM domain (the HELO name for a null sender), every DKIM signature
// (RFC 6376) and DMARC (RFC 7489) policy and alignment for the From domain,
// all through the configured resolver. A check that could not be made (no
// record, DNS failure) is none, never pass.
func (s *Service) authenticate(ctx context.Context, env smtpin.Envelope, raw []byte, p *Parsed) authOutcome {
	ctx, cancel := context.WithTimeout(ctx, mailauth.Timeout)
	defer cancel()
	r := s.resolver
	lookupTXT := func(name string) ([]string, error) { return r.LookupTXT(ctx, name) }

	out := authOutcome{Auth: Auth{SPF: authNone, DKIM: authNone, DMARC: authNone}}
	var results []authres.Result

	// SPF.
	sender := mailauth.Sender{IP: env.RemoteIP, Helo: env.Helo, MailFrom: env.MailFrom}
	spfDomain := sender.SPFDomain()
	spfRes := &authres.SPFResult{Value: authres.ResultNone, From: spfDomain, Helo: env.Helo}
	if res, err := mailauth.SPF(ctx, r, sender); res != "" {
		spfRes.Value = authres.ResultValue(strings.ToLower(string(res)))
		if err != nil && res != spf.Pass {
			spfRes.Reason = err.Error()
		}
		out.Auth.SPF = spfVerdict(res)
	}
	results = append(results, spfRes)

	// DKIM: every signature is verified and reported; one that verifies is
	// enough for pass, one that fails with none verifying is fail.
	verifs := mailauth.DKIM(ctx, r, raw)
	var dkimPassed []string
	for _, v := range verifs {
		res := &authres.DKIMResult{Value: authres.ResultPass, Domain: v.Domain, Identifier: v.Identifier}
		switch {
		case v.Err == nil:
			dkimPassed = append(dkimPassed, strings.ToLower(v.Domain))
			out.Auth.DKIM = authPass
		case dkim.IsTempFail(v.Err):
			res.Value, res.Reason = authres.ResultTempError, v.Err.Error()
		case dkim.IsPermFail(v.Err):
			res.Value, res.Reason = authres.ResultPermError, v.Err.Error()
			if out.Auth.DKIM == authNone {
				out.Auth.DKIM = authFail
			}
		default:
			res.Value, res.Reason = authres.ResultFail, v.Err.Error()
			if out.Auth.DKIM == authNone {
				out.Auth.DKIM = authFail
			}
		}
		results = append(results, res)
	}
	if len(verifs) == 0 {
		results = append(results, &authres.DKIMResult{Value: authres.ResultNone})
	}

	// DMARC for the RFC 5322 From domain.
	fromDomain := mailauth.DomainOf(p.FromAddr)
	dmarcRes := &authres.DMARCResult{Value: authres.ResultNone, From: fromDomain}
	if fromDomain != "" {
		rec, org, err := lookupDMARC(fromDomain, lookupTXT)
		switch {
		case err == nil:
			policy := rec.Policy
			if org && fromDomain != orgDomain(fromDomain) && rec.SubdomainPolicy != "" {
				policy = rec.SubdomainPolicy
			}
			out.DMARCPolicy = string(policy)
			aligned := out.Auth.SPF == authPass && alignedDomain(spfDomain, fromDomain, rec.SPFAlignment)
			for _, d := range dkimPassed {
				aligned = aligned || alignedDomain(d, fromDomain, rec.DKIMAlignment)
			}
			if aligned {
				out.Auth.DMARC, dmarcRes.Value = authPass, authres.ResultPass
			} else {
				out.Auth.DMARC, dmarcRes.Value = authFail, authres.ResultFail
				dmarcRes.Reason = "no aligned SPF or DKIM pass; p=" + out.DMARCPolicy
			}
		case dmarc.IsTempFail(err):
			dmarcRes.Value, dmarcRes.Reason = authres.ResultTempError, err.Error()
		case errors.Is(err, dmarc.ErrNoPolicy):
		default:
			dmarcRes.Value, dmarcRes.Reason = authres.ResultPermError, err.Error()
		}
	}
	results = append(results, dmarcRes)
	// authres leaves a space after a result without properties.
	out.Header = strings.ReplaceAll(strings.TrimSpace(authres.Format(s.cfg.ServiceDomain, results)), " ;", ";")
	return out
}

// spfVerdict folds RFC 7208's seven results into the auth block's three:
// softfail is a fail (the domain says the host is not its own); neutral,
// temperror and permerror decide nothing.
func spfVerdict(r spf.Result) string {
	switch r {
	case spf.Pass:
		return authPass
	case spf.Fail, spf.SoftFail:
		return authFail
	}
	return authNone
}

// lookupDMARC finds the record for domain, falling back to its
// organizational domain (RFC 7489 §6.6.3); org reports the fallback.
func lookupDMARC(domain string, lookupTXT func(string) ([]string, error)) (*dmarc.Record, bool, error) {
	opts := &dmarc.LookupOptions{LookupTXT: lookupTXT}
	rec, err := dmarc.LookupWithOptions(domain, opts)
	if !errors.Is(err, dmarc.ErrNoPolicy) {
		return rec, false, err
	}
	org := orgDomain(domain)
	if org == domain {
		return nil, false, err
	}
	rec, err = dmarc.LookupWithOptions(org, opts)
	return rec, true, err
}

// alignedDomain reports DMARC identifier alignment (mailauth.Aligned).
func alignedDomain(d, from string, mode dmarc.AlignmentMode) bool {
	return mailauth.Aligned(d, from, mode == dmarc.AlignmentStrict)
}

func orgDomain(d string) string { return mailauth.OrgDomain(d) }
