package policy

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// IP is a dedicated outbound address taken by a workspace.
type IP struct {
	ID          string
	WorkspaceID string
	IP          string
	Paused      bool
	DailyCap    *int64 // nil: the warm-up allowance alone
	CreatedAt   time.Time
}

// Warmup is where an IP stands on the warm-up schedule.
type Warmup struct {
	Day       int    // 1 on the UTC day it was taken
	Allowance *int64 // sends the schedule allows today; nil once warmed up
}

// warmupSchedule is the daily allowance of a new IP, day 1 first: roughly
// doubling each day from 50, the shape of the warm-up plans the large
// senders publish (SendGrid's and Amazon SES's: start in the tens, double
// while bounces and complaints stay low, full volume after about a month).
// Past the last day the IP is warm: no allowance.
var warmupSchedule = []int64{
	50, 100, 200, 400, 750, 1500, 3000, 6000, 10000, 20000,
	40000, 75000, 100000, 150000, 200000, 300000, 400000, 500000, 750000, 1000000,
	1250000, 1500000, 2000000, 2500000, 3000000, 3500000, 4000000, 4500000, 5000000, 6000000,
}

// MaxDailyCap bounds daily_cap: more than any schedule day allows means a
// typo, not a plan.
const MaxDailyCap = 10_000_000

// WarmupOf is ip's place on the schedule at now.
func WarmupOf(ip IP, now time.Time) Warmup {
	day := int(dayStart(now).Sub(dayStart(ip.CreatedAt))/(24*time.Hour)) + 1
	w := Warmup{Day: max(day, 1)}
	if w.Day <= len(warmupSchedule) {
		a := warmupSchedule[w.Day-1]
		w.Allowance = &a
	}
	return w
}

// Limit is what ip may send today: the warm-up allowance lowered by its
// daily cap (the cap never raises it); nil means no limit.
func Limit(ip IP, now time.Time) *int64 {
	a := WarmupOf(ip, now).Allowance
	if ip.DailyCap != nil && (a == nil || *ip.DailyCap < *a) {
		return ip.DailyCap
	}
	return a
}

func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// DefaultRegion and Residency answer GET /v1/ips for a self-hosted node:
// one region, the operator's own network, and data that stays on the
// operator's servers.
const (
	DefaultRegion = "local"
	Residency     = "self-hosted"
)

// SharedPool is the addresses mail leaves from when a workspace has no
// dedicated IP (MAILROOM_OUTBOUND_IPS; empty: the host's default route).
func (s *Service) SharedPool() []string {
	return append([]string{}, s.shared...)
}

// Inventory is the operator's dedicated IPs (MAILROOM_IPS), in order.
func (s *Service) Inventory() []netip.Addr { return s.set.IPs }

// ListIPs lists the workspace's dedicated IPs.
func (s *Service) ListIPs(ctx context.Context, ws string) ([]IP, error) {
	return listIPs(ctx, s.db, ws)
}

// GetIP reads one of the workspace's IPs (404 for another workspace's).
func (s *Service) GetIP(ctx context.Context, ws, id string) (IP, error) {
	x, err := getIP(ctx, s.db, ws, id)
	if errors.Is(err, store.ErrNotFound) {
		return x, apierr.NotFound("ip")
	}
	return x, err
}

// TakeIP takes an address from the inventory for the workspace: the one
// asked for, or the first free one. An address outside the inventory, or
// taken by another workspace, answers 404 (another workspace's holdings are
// not probed); one the workspace already holds answers it again (taken
// false); a full inventory answers 409 no_ip_available.
func (s *Service) TakeIP(ctx context.Context, ws, want string) (IP, bool, error) {
	var wantIP netip.Addr
	if want != "" {
		a, err := netip.ParseAddr(strings.TrimSpace(want))
		if err != nil || a.Zone() != "" {
			return IP{}, false, apierr.InvalidRequest("ip %q is not an IP address.", want)
		}
		wantIP = a.Unmap()
		if !slices.Contains(s.set.IPs, wantIP) {
			return IP{}, false, apierr.NotFound("ip").WithNext("GET /v1/ips lists the addresses this node may send from.")
		}
	}
	if len(s.set.IPs) == 0 {
		return IP{}, false, apierr.Conflict("no_ip_available", "This node has no dedicated IPs (MAILROOM_IPS is empty).").
			WithNext("Ask the operator to list outbound addresses in MAILROOM_IPS.")
	}
	var out IP
	taken := true
	defer s.forgetIPs(ws)
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		candidates := s.set.IPs
		if wantIP.IsValid() {
			candidates = []netip.Addr{wantIP}
		}
		for _, c := range candidates {
			held, err := ipByAddr(ctx, tx, c.String())
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return err
			case held.WorkspaceID == ws && wantIP.IsValid():
				out, taken = held, false
				return nil
			default:
				continue
			}
			out = IP{ID: ids.New("ip"), WorkspaceID: ws, IP: c.String(), CreatedAt: s.clock.Now().UTC()}
			return insertIP(ctx, tx, out)
		}
		if wantIP.IsValid() {
			return apierr.NotFound("ip")
		}
		return apierr.Conflict("no_ip_available", "Every dedicated IP of this node is taken.").
			WithNext("Ask the operator to add addresses to MAILROOM_IPS, or keep sending from the shared pool.")
	})
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unique") {
		// Another request took it between the read and the insert.
		return IP{}, false, apierr.NotFound("ip")
	}
	return out, taken, err
}

// ReleaseIP hands an IP back to the inventory.
func (s *Service) ReleaseIP(ctx context.Context, ws, id string) error {
	defer s.forgetIPs(ws)
	ok, err := deleteIP(ctx, s.db, ws, id)
	if err != nil {
		return err
	}
	if !ok {
		return apierr.NotFound("ip")
	}
	return nil
}

// IPPatch is a PATCH body: nil leaves a field; ClearCap sets daily_cap to null.
type IPPatch struct {
	Paused   *bool
	DailyCap *int64
	ClearCap bool
}

// UpdateIP applies a patch: paused, and daily_cap (0 to MaxDailyCap, or null).
func (s *Service) UpdateIP(ctx context.Context, ws, id string, p IPPatch) (IP, error) {
	if p.DailyCap != nil && (*p.DailyCap < 0 || *p.DailyCap > MaxDailyCap) {
		return IP{}, apierr.InvalidRequest("daily_cap must be a whole number from 0 to %d, or null.", MaxDailyCap)
	}
	x, err := s.GetIP(ctx, ws, id)
	if err != nil {
		return x, err
	}
	if p.Paused != nil {
		x.Paused = *p.Paused
	}
	if p.ClearCap {
		x.DailyCap = nil
	} else if p.DailyCap != nil {
		c := *p.DailyCap
		x.DailyCap = &c
	}
	defer s.forgetIPs(ws)
	return x, updateIP(ctx, s.db, x)
}

// ReverseDNS is an IP's PTR check: the name it should have (the node's HELO
// name, which receivers compare it with), the names it has, and whether
// one of them resolves back to the IP (forward-confirmed reverse DNS).
type ReverseDNS struct {
	Expected         string
	Actual           []string
	ForwardConfirmed bool
}

// Resolver is the DNS the reverse check asks (MAILROOM_DNS_RESOLVER).
type Resolver interface {
	LookupAddr(ctx context.Context, ip string) ([]string, error)
	LookupHost(ctx context.Context, name string) ([]string, error)
}

// CheckReverseDNS looks up ip's PTR records and confirms them forward. A
// lookup that fails (no PTR, a DNS error) answers no names, not an error:
// the check's answer is that the PTR is not right.
func (s *Service) CheckReverseDNS(ctx context.Context, ip string) ReverseDNS {
	out := ReverseDNS{Expected: s.helo, Actual: []string{}}
	if s.resolver == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	names, err := s.resolver.LookupAddr(ctx, ip)
	if err != nil {
		return out
	}
	want, _ := netip.ParseAddr(ip)
	for _, n := range names {
		n = strings.TrimSuffix(strings.ToLower(n), ".")
		out.Actual = append(out.Actual, n)
		addrs, err := s.resolver.LookupHost(ctx, n)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if got, err := netip.ParseAddr(a); err == nil && got.Unmap() == want.Unmap() {
				out.ForwardConfirmed = true
			}
		}
	}
	return out
}
