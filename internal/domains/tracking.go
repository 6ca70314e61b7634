package domains

import (
	"context"
	"errors"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/dnsresolve"
)

// Tracking is a domain's tracking host setting with a live CNAME check.
type Tracking struct {
	DomainID    string
	Host        *string // custom host; nil = links use SharedHost
	SharedHost  string
	CNAMETarget string // what a custom host's CNAME must point at
	CNAMEFound  *bool  // nil when there is no custom host
}

// ExpandTrackingHost turns what was sent as tracking_host into a full host
// name under domain: a bare label becomes label.<domain>; a full name must
// sit strictly under the sending domain.
func ExpandTrackingHost(domain, input string) (string, error) {
	s := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(input)), ".")
	if s != "" && !strings.Contains(s, ".") {
		s += "." + domain
	}
	host, err := Normalize(s)
	if err != nil {
		return "", apierr.InvalidRequest("tracking_host %q is not a host name.", input)
	}
	if !strings.HasSuffix(host, "."+domain) {
		return "", apierr.InvalidRequest("tracking_host %s must sit under the sending domain %s.", host, domain).
			WithNext("Send a bare label such as \"links\" to use links." + domain + ".")
	}
	return host, nil
}

// SetTrackingHost sets (host non-nil) or clears (nil: back to the shared
// host) a domain's tracking host. A new host is turned on only once its
// CNAME points at one of the configured tracking targets.
func (s *Service) SetTrackingHost(ctx context.Context, workspaceID, id string, host *string) (*Domain, error) {
	d, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	if host == nil {
		if d.Tracking == nil {
			return nil, errNothingChanges("the domain already uses the shared tracking host")
		}
		if err := setTrackingHost(ctx, s.db, workspaceID, id, nil); err != nil {
			return nil, err
		}
		s.forgetTrackingHosts(workspaceID)
		return s.Get(ctx, workspaceID, id)
	}
	if d.Shared {
		return nil, apierr.Invalid422("tracking_needs_custom_domain",
			"A tracking host needs a custom domain; %s is the workspace's shared sending subdomain.", d.Name).
			WithNext("Add your own domain with POST /v1/domains and set its tracking host.")
	}
	h, err := ExpandTrackingHost(d.Name, *host)
	if err != nil {
		return nil, err
	}
	if d.Tracking != nil && *d.Tracking == h {
		return nil, errNothingChanges("the tracking host is already " + h)
	}
	if found, _ := s.cnameFound(ctx, h); !found {
		return nil, apierr.Invalid422("tracking_cname_not_found", "%s has no CNAME record pointing at %s yet.", h, s.cnameTarget()).
			WithNext("Publish "+h+" CNAME "+s.cnameTarget()+", wait for it to resolve, then try again.").
			With("cname_target", s.cnameTarget())
	}
	if err := setTrackingHost(ctx, s.db, workspaceID, id, h); err != nil {
		return nil, err
	}
	s.forgetTrackingHosts(workspaceID)
	return s.Get(ctx, workspaceID, id)
}

func errNothingChanges(why string) *apierr.Error {
	return apierr.InvalidRequest("The body changes nothing: %s.", why)
}

// TrackingFor reads a domain's tracking setting and checks its CNAME now.
func (s *Service) TrackingFor(ctx context.Context, workspaceID, id string) (*Tracking, error) {
	d, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	t := &Tracking{DomainID: d.ID, Host: d.Tracking, SharedHost: s.cfg.SharedTrackingHost, CNAMETarget: s.cnameTarget()}
	if d.Tracking != nil {
		found, err := s.cnameFound(ctx, *d.Tracking)
		if err != nil {
			s.log.Warn("tracking CNAME lookup failed", "host", *d.Tracking, "err", err)
		}
		t.CNAMEFound = &found
	}
	return t, nil
}

func (s *Service) cnameTarget() string {
	if len(s.cfg.TrackingTargets) == 0 {
		return "track." + s.cfg.ServiceDomain
	}
	return s.cfg.TrackingTargets[0]
}

// cnameFound looks the host's CNAME up live. err is set only when DNS
// could not answer.
func (s *Service) cnameFound(ctx context.Context, host string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	target, err := s.resolver.LookupCNAME(cctx, host)
	if errors.Is(err, dnsresolve.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	targets := s.cfg.TrackingTargets
	if len(targets) == 0 {
		targets = []string{s.cnameTarget()}
	}
	for _, t := range targets {
		if sameHost(target, t) {
			return true, nil
		}
	}
	return false, nil
}

// trackingHostFor is how long a node reuses a domain's tracking host: it
// is asked once per tracked email (a query per recipient of a tracked
// broadcast, 3% of its CPU, profiled). A change through this node is seen
// at once; through another node, within this time.
const trackingHostFor = 5 * time.Second

type trackingHostEntry struct {
	host    string
	expires time.Time
}

// TrackingHost returns the custom tracking host of the workspace's
// sending domain, or "" when it has none (links then use the shared host
// under MAILROOM_PUBLIC_URL). The deliver job asks it for tracked mail only.
func (s *Service) TrackingHost(ctx context.Context, workspaceID, domain string) (string, error) {
	domain = strings.ToLower(domain)
	key := workspaceID + "\x00" + domain
	now := s.clock.Now()
	if e, ok := s.trackingHosts.Load(key); ok && now.Before(e.(trackingHostEntry).expires) {
		return e.(trackingHostEntry).host, nil
	}
	host, err := trackingHost(ctx, s.db, workspaceID, domain)
	if err == nil {
		s.trackingHosts.Store(key, trackingHostEntry{host: host, expires: now.Add(trackingHostFor)})
	}
	return host, err
}

// forgetTrackingHosts drops the workspace's remembered tracking hosts
// after one of its domains changed.
func (s *Service) forgetTrackingHosts(workspaceID string) {
	s.trackingHosts.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), workspaceID+"\x00") {
			s.trackingHosts.Delete(k)
		}
		return true
	})
}
