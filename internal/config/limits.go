package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits keep one client from holding a listener's connections (issue
// #38): each field names its variable, default and bounds.
type Limits struct {
	// SMTPSessionsPerIP is how many sessions one client address (IPv6: one
	// /64) may hold at once on each SMTP listener, inbound and submission
	// (MAILROOM_SMTP_MAX_SESSIONS_PER_IP; default 50, Postfix's
	// smtpd_client_connection_count_limit; at least 1); more are told
	// 421 4.7.0. Loopback counts like any address.
	SMTPSessionsPerIP int
	// SMTPMaxSession is an SMTP session's lifetime, busy or not
	// (MAILROOM_SMTP_MAX_SESSION, a Go duration; default 10m, at least 1s);
	// then it is told 421 4.7.0 and closed.
	SMTPMaxSession time.Duration
	// SMTPMaxCommands is how many commands an SMTP session may send, NOOP
	// and RSET included (MAILROOM_SMTP_MAX_COMMANDS; default 1000, at least
	// 10); an authenticated submission session gets ten times as many.
	SMTPMaxCommands int
	// HTTPBodyTimeout is how long a request may take to send its body
	// (MAILROOM_HTTP_BODY_TIMEOUT, a Go duration; default 30s, at least
	// 1s); a slower one is answered 408 request_timeout and closed.
	HTTPBodyTimeout time.Duration
	// HTTPUploadTimeout replaces it on the routes that take large bodies:
	// sends, contact imports, automation YAML, the dashboard's CSV import
	// (MAILROOM_HTTP_UPLOAD_TIMEOUT; default 5m, at least 1s).
	HTTPUploadTimeout time.Duration
	// HTTPMaxBodies is how many request bodies a node receives at once
	// (MAILROOM_HTTP_MAX_BODIES; default 256, at least 1), and
	// HTTPMaxBodiesPerIP how many of them one client address may send
	// (MAILROOM_HTTP_MAX_BODIES_PER_IP; default 64, at least 1); a body
	// past either is answered 503 with Retry-After.
	HTTPMaxBodies      int
	HTTPMaxBodiesPerIP int
	// MinFreeDisk is the free space kept on the disk holding the SQLite
	// database (MAILROOM_MIN_FREE_DISK: a size such as 512MB or 2GB, a
	// share such as 5%, or 0 for no guard; default "512MB,5%": the smaller
	// of the two, so a small volume is not refused from the start). Below
	// it the API answers new work 507 storage_full, SMTP 452 4.3.1, and
	// /readyz not ready (internal/diskguard).
	MinFreeDisk FreeDisk
}

// FreeDisk is MAILROOM_MIN_FREE_DISK read: Bytes, Percent of the file
// system, or both (the smaller applies); zero for both is off.
type FreeDisk struct {
	Bytes   int64
	Percent float64
	Text    string // as written, for messages
}

// sizeUnits are the suffixes a size takes, in binary multiples as
// MAILROOM_SMTP_MAX_BYTES counts its 40 MB.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}

// ParseFreeDisk reads a MAILROOM_MIN_FREE_DISK value: comma-separated
// sizes (512MB, 2GB, 1048576) and shares (5%), at most one of each.
func ParseFreeDisk(v string) (FreeDisk, error) {
	f := FreeDisk{Text: v}
	bad := fmt.Errorf("MAILROOM_MIN_FREE_DISK: %q is not a size (such as 512MB or 2GB), a share of the disk (such as 5%%), both (512MB,5%%) or 0", v)
	var sized, shared bool
	for _, part := range strings.Split(v, ",") {
		part = strings.ToUpper(strings.TrimSpace(part))
		if pct, ok := strings.CutSuffix(part, "%"); ok {
			p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
			if err != nil || p < 0 || p >= 100 || shared {
				return FreeDisk{}, bad
			}
			f.Percent, shared = p, true
			continue
		}
		mult := int64(1)
		for _, u := range sizeUnits {
			if n, ok := strings.CutSuffix(part, u.suffix); ok {
				part, mult = strings.TrimSpace(n), u.mult
				break
			}
		}
		n, err := strconv.ParseFloat(part, 64)
		if err != nil || n < 0 || n*float64(mult) > 1<<62 || sized {
			return FreeDisk{}, bad
		}
		f.Bytes, sized = int64(n*float64(mult)), true
	}
	return f, nil
}

// loadLimits reads the Limits, with the problems in words.
func loadLimits(get func(k, def string) string) (Limits, []error) {
	var l Limits
	var errs []error
	count := func(k string, def, least int) int {
		v := strings.TrimSpace(get(k, strconv.Itoa(def)))
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			errs = append(errs, fmt.Errorf("%s: %q is not a whole number of at least %d", k, v, least))
			return def
		}
		return n
	}
	duration := func(k, def string) time.Duration {
		v := strings.TrimSpace(get(k, def))
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration of at least 1s (such as %s)", k, v, def))
			d, _ = time.ParseDuration(def)
		}
		return d
	}
	l.SMTPSessionsPerIP = count("MAILROOM_SMTP_MAX_SESSIONS_PER_IP", 50, 1)
	l.SMTPMaxSession = duration("MAILROOM_SMTP_MAX_SESSION", "10m")
	l.SMTPMaxCommands = count("MAILROOM_SMTP_MAX_COMMANDS", 1000, 10)
	l.HTTPBodyTimeout = duration("MAILROOM_HTTP_BODY_TIMEOUT", "30s")
	l.HTTPUploadTimeout = duration("MAILROOM_HTTP_UPLOAD_TIMEOUT", "5m")
	l.HTTPMaxBodies = count("MAILROOM_HTTP_MAX_BODIES", 256, 1)
	l.HTTPMaxBodiesPerIP = count("MAILROOM_HTTP_MAX_BODIES_PER_IP", 64, 1)
	free, err := ParseFreeDisk(strings.TrimSpace(get("MAILROOM_MIN_FREE_DISK", "512MB,5%")))
	if err != nil {
		errs = append(errs, err)
		free, _ = ParseFreeDisk("512MB,5%")
	}
	l.MinFreeDisk = free
	return l, errs
}
