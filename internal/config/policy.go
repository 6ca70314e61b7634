package config

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// Policy is the operator's sending policy (CONTRACT-WAVE2, "Policy, quotas
// and dedicated IPs"). A count of 0 means no limit; a rate of 0 turns its
// rule off.
type Policy struct {
	DailyQuota      int // MAILROOM_DAILY_QUOTA: real sends per workspace per UTC day
	MonthlyQuota    int // MAILROOM_MONTHLY_QUOTA: real sends per workspace per UTC month
	AddressDailyCap int // MAILROOM_ADDRESS_DAILY_CAP: real sends per sending address per UTC day
	DuplicateBurst  int // MAILROOM_DUPLICATE_BURST: distinct recipients of one body per UTC day
	// VelocityFactor (MAILROOM_VELOCITY_FACTOR): a workspace sending faster
	// in the current minute than this many times its per-minute average of
	// the trailing hour gets velocity_spike, once that hour holds at least
	// VelocityMinSends (MAILROOM_VELOCITY_MIN_SENDS, default 600).
	VelocityFactor   float64
	VelocityMinSends int
	// ColdStart (MAILROOM_COLD_START, 0 = off) is the cold-sending
	// throttle: the real sends a workspace, and each of its sending
	// addresses, with no history may make in a UTC day; a day's allowance is
	// max(ColdStart, ColdGrowth × the busiest of the previous 7 UTC days)
	// (MAILROOM_COLD_GROWTH, default 2).
	ColdStart  int
	ColdGrowth float64
	// PauseBounceRate and PauseComplaintRate (defaults 0.08 and 0.003) pause
	// a workspace whose real sends of the last 7 days, at least
	// PauseMinSends of them (default 200), bounced or complained at that rate.
	PauseBounceRate    float64
	PauseComplaintRate float64
	PauseMinSends      int
	// IPs (MAILROOM_IPS) is the dedicated IP inventory: the outbound
	// addresses this host may send from.
	IPs []netip.Addr
}

// loadPolicy reads the policy variables; get answers a variable or its default.
func loadPolicy(get func(k, def string) string) (Policy, []error) {
	var p Policy
	var errs []error
	count := func(k string, def int) int {
		v := strings.TrimSpace(get(k, strconv.Itoa(def)))
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a non-negative whole number", k, v))
			return def
		}
		return n
	}
	rate := func(k string, def float64, maxV float64) float64 {
		v := strings.TrimSpace(get(k, strconv.FormatFloat(def, 'g', -1, 64)))
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > maxV || math.IsNaN(f) {
			errs = append(errs, fmt.Errorf("%s: %q is not a number from 0 to %g", k, v, maxV))
			return def
		}
		return f
	}
	p.DailyQuota = count("MAILROOM_DAILY_QUOTA", 0)
	p.MonthlyQuota = count("MAILROOM_MONTHLY_QUOTA", 0)
	p.AddressDailyCap = count("MAILROOM_ADDRESS_DAILY_CAP", 0)
	p.DuplicateBurst = count("MAILROOM_DUPLICATE_BURST", 0)
	p.VelocityFactor = rate("MAILROOM_VELOCITY_FACTOR", 0, 1e6)
	p.VelocityMinSends = count("MAILROOM_VELOCITY_MIN_SENDS", 600)
	p.ColdStart = count("MAILROOM_COLD_START", 0)
	p.ColdGrowth = rate("MAILROOM_COLD_GROWTH", 2, 1e6)
	p.PauseBounceRate = rate("MAILROOM_PAUSE_BOUNCE_RATE", 0.08, 1)
	p.PauseComplaintRate = rate("MAILROOM_PAUSE_COMPLAINT_RATE", 0.003, 1)
	p.PauseMinSends = count("MAILROOM_PAUSE_MIN_SENDS", 200)
	if p.VelocityFactor != 0 && p.VelocityFactor < 1 {
		errs = append(errs, fmt.Errorf("MAILROOM_VELOCITY_FACTOR: %g would refuse a workspace sending at its own average; use 0 (off) or at least 1", p.VelocityFactor))
	}
	if p.ColdGrowth < 1 {
		errs = append(errs, fmt.Errorf("MAILROOM_COLD_GROWTH: %g would shrink the allowance of a workspace sending at its own pace; use at least 1", p.ColdGrowth))
	}
	seen := map[netip.Addr]bool{}
	for _, s := range strings.Split(get("MAILROOM_IPS", ""), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			errs = append(errs, fmt.Errorf("MAILROOM_IPS: %q is not an IP address", s))
			continue
		}
		ip = ip.Unmap()
		if !seen[ip] {
			seen[ip] = true
			p.IPs = append(p.IPs, ip)
		}
	}
	return p, errs
}
