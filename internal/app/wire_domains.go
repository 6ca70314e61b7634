package app

import (
	"net"
	"net/url"
	"strings"

	"github.com/riverqueue/river"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/domains"
)

// wireDomains builds the domains service and registers the nightly pass.
// SPF authorises MAILROOM_OUTBOUND_IPS when set, else the HELO host's
// addresses (a:); MX points at MAILROOM_INBOUND_HOST. A custom tracking
// host's CNAME may point at track.<service domain> or at the public URL's host.
func (a *App) wireDomains(w *wiring) error {
	spf := SPFTerms(a.Config.HeloName, a.Config.OutboundIPs, a.Config.SPFAuthorize)
	targets := []string{"track." + a.Config.ServiceDomain}
	shared := targets[0]
	if u, err := url.Parse(a.Config.PublicURL); err == nil && u.Hostname() != "" {
		shared = strings.ToLower(u.Hostname())
		if net.ParseIP(shared) == nil && strings.Contains(shared, ".") && shared != targets[0] {
			targets = append(targets, shared)
		}
	}
	svc := domains.New(a.DB, a.Box, a.Clock, dnsresolve.New(a.Config.DNSResolver), domains.Config{
		ServiceDomain: a.Config.ServiceDomain,
		Records:       domains.RecordConfig{InboundHost: a.Config.InboundHost, SPFInclude: spf, DMARCRua: a.Config.DMARCRua},
		SPF: &domains.SPFEvaluator{IPs: a.Config.OutboundIPs, Helo: a.Config.HeloName,
			Resolver: domains.NewResolver(a.Config.DNSResolver)},
		TrackingTargets:    targets,
		SharedTrackingHost: shared,
		Limit:              a.Config.DomainLimit,
		NewKey:             w.dkimKeys,
		Workspaces:         a.Workspaces,
		VerifyWithoutDNS:   a.Config.Captures(), // nothing leaves the node: no receiver checks the records
	}, a.Log.With("component", "domains"))
	a.services.Domains = svc
	river.AddWorker(w.workers, &domains.RecheckWorker{Service: svc})
	w.periodic = append(w.periodic, svc.RecheckPeriodic())
	return nil
}

// SPFTerms are the mechanisms every sending domain's SPF record carries:
// MAILROOM_OUTBOUND_IPS as ip4:/ip6: (config parsed them as addresses) and
// MAILROOM_SPF_AUTHORIZE's terms (a smarthost's senders); a: of the HELO
// name when neither is set.
func SPFTerms(helo string, ips, authorize []string) string {
	var terms []string
	for _, ip := range ips {
		if strings.Contains(ip, ":") {
			terms = append(terms, "ip6:"+ip)
		} else {
			terms = append(terms, "ip4:"+ip)
		}
	}
	terms = append(terms, authorize...)
	if len(terms) == 0 {
		return "a:" + helo
	}
	return strings.Join(terms, " ")
}

// Domains is the node's domains service (for the other areas' wiring and tests).
func (a *App) Domains() *domains.Service { return a.services.Domains }
