// Package config reads Mailroom's configuration from MAILROOM_* environment
// variables. Defaults make `mailroom serve` work with no configuration at all.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultHTTPAddr is where the API listens when MAILROOM_HTTP_ADDR is unset
// (and where `mailroom mcp` looks for it on this host).
const DefaultHTTPAddr = ":8080"

// Config is the whole of Mailroom's settings, typed.
type Config struct {
	HTTPAddr string
	// DashboardAddr is where the dashboard listens: "" (the default) on
	// HTTPAddr beside the API, "off" nowhere, or an address of its own.
	DashboardAddr        string
	SMTPAddr             string
	DatabaseURL          string
	ServiceDomain        string
	PublicURL            string
	Outbound             string
	DNSResolver          string
	WebhookAllowPrivate  bool
	SecretKey            string
	RateLimit            int
	RateLimitAnonymous   int
	RedisURL             string
	OutboundIPs          []string // published in SPF; empty means a: of the service domain's outbound host
	InboundHost          string   // MX target published for sending domains
	DomainLimit          int      // domains per workspace; 0 = unlimited
	SMTPPort             int      // destination port for direct MX delivery (25; tests use the sink's)
	HeloName             string
	LogLevel             string
	LogFormat            string // json (default) or text
	DataDir              string // where SQLite and the generated secret key live
	DeliveryConcurrency  int
	WebhookConcurrency   int
	RelayInsecureSkipTLS bool
	// JobRescueAfter is how long a job may stay running before the queue
	// assumes its worker died and runs it again (MAILROOM_JOB_RESCUE_AFTER,
	// a Go duration; default 5m).
	JobRescueAfter time.Duration
	// OutboundCommandTimeout bounds each reply of a receiving server or
	// relay (twice that for the reply after DATA), far below RFC 5321
	// 4.5.3.2's minutes, so one hanging server cannot hold a delivery slot
	// for long (MAILROOM_OUTBOUND_COMMAND_TIMEOUT; default 60s).
	OutboundCommandTimeout time.Duration
	// NodeTimeout is how long a node may go without a heartbeat before the
	// other nodes take it for gone and take up its running jobs and webhook
	// leases (MAILROOM_NODE_TIMEOUT, a Go duration; default 15s). Nodes beat
	// every fifth of it.
	NodeTimeout time.Duration
	// StreamWriteTimeout is how long a write to an event stream
	// (GET /v1/events/stream) may wait for a slow client before the stream
	// is dropped; the client resumes with Last-Event-ID
	// (MAILROOM_STREAM_WRITE_TIMEOUT, a Go duration from 100ms to 5m; default 10s).
	StreamWriteTimeout time.Duration
	// SPFAuthorize are extra SPF terms (include:, a, a:, mx, mx:, ip4:, ip6:)
	// every sending domain's SPF record carries: a smarthost's senders
	// (MAILROOM_SPF_AUTHORIZE, space or comma separated).
	SPFAuthorize []string
	// DMARCRua is the rua= address suggested DMARC records name
	// (MAILROOM_DMARC_RUA, an address or mailto: URI; empty: none).
	DMARCRua string
	// Policy is the sending policy: quotas, caps, throttles, pauses and
	// the dedicated IP inventory (policy.go).
	Policy Policy
	// Feedback says whose abuse reports are believed (feedback.go).
	Feedback Feedback
	// Limits are the caps on what one client may hold open on the SMTP and
	// HTTP listeners (limits.go).
	Limits Limits
	// Retention: how long bodies, events and raw messages are kept.
	Retention Retention
	// Inbound SMTP: MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY (PEM
	// files) turn on STARTTLS; MAILROOM_SMTP_MAX_BYTES (default 41943040,
	// 40 MB) is the SIZE announced and enforced; MAILROOM_SMTP_MAX_RECIPIENTS
	// (default 50) RCPTs per message; MAILROOM_SMTP_MAX_SESSIONS (default
	// 200) concurrent sessions on each listener, submission's too; MAILROOM_SMTP_TIMEOUT (default 2m) the idle
	// read and write timeout of a session (only commands that make
	// progress restart it, not NOOP or RSET; see smtplimit.Progress).
	SMTPTLSCert       string
	SMTPTLSKey        string
	SMTPMaxBytes      int
	SMTPMaxRecipients int
	SMTPMaxSessions   int
	SMTPTimeout       time.Duration
	// SMTP submission (internal/submission): MAILROOM_SUBMISSION_ADDR is the
	// listener with STARTTLS, MAILROOM_SUBMISSION_TLS_ADDR the one with
	// implicit TLS; both use MAILROOM_SMTP_TLS_CERT/_KEY. With a certificate
	// they default to :587 and :465; without one both are off, and
	// MAILROOM_SUBMISSION_ADDR may be set to a loopback address for
	// development (AUTH in plain text is offered to loopback clients only).
	// "off" turns either off.
	SubmissionAddr    string
	SubmissionTLSAddr string
	// Libcrypto says whether RSA DKIM signatures are made by the system's
	// OpenSSL libcrypto where the binary can load it (MAILROOM_LIBCRYPTO
	// "auto", the default) or always by Go's crypto/rsa ("off").
	Libcrypto bool

	// What the node shows and reaches at its edges (issue 38).
	//
	// MetricsAddr is /metrics' own listener (MAILROOM_METRICS_ADDR, such as
	// 127.0.0.1:9090); when set, the API listener does not serve /metrics.
	// Empty (the default): /metrics is on the API listener and, without a
	// token, answers loopback clients only.
	MetricsAddr string
	// MetricsToken, when set (MAILROOM_METRICS_TOKEN), is the bearer token
	// /metrics needs (Authorization: Bearer <token>) on whichever listener
	// serves it, from any address.
	MetricsToken string
	// OutboundAllowPrivate lets MX delivery and MTA-STS policy fetches
	// connect to loopback, private and link-local addresses
	// (MAILROOM_OUTBOUND_ALLOW_PRIVATE; test sinks). Unset, it follows
	// MAILROOM_WEBHOOK_ALLOW_PRIVATE: one lever for a test environment. The
	// relay of MAILROOM_OUTBOUND=smtp://... is trusted and never checked.
	OutboundAllowPrivate bool
}

// OutboundCapture is MAILROOM_OUTBOUND's development transport: every
// message is stored as captured mail (GET /v1/captured-emails) and none
// leaves the node; domains verify without their DNS records.
const OutboundCapture = "capture"

// Captures reports whether outbound mail is captured instead of sent.
func (c *Config) Captures() bool { return c.Outbound == OutboundCapture }

// IsPostgres reports whether the database URL names PostgreSQL.
func (c *Config) IsPostgres() bool {
	return strings.HasPrefix(c.DatabaseURL, "postgres://") || strings.HasPrefix(c.DatabaseURL, "postgresql://")
}

// Load reads the configuration through lookupEnv (os.LookupEnv in
// production; see Map for tests) and validates it. A variable that is unset
// or empty takes its default, except MAILROOM_SMTP_ADDR, which set to empty
// (or "off") turns the inbound listener off, as the external contract says.
// Every wrong variable is reported, not only the first.
func Load(lookupEnv func(string) (string, bool)) (*Config, error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	r := &reader{get: func(k, def string) string {
		if v, ok := lookup(getenv, k); ok {
			return v
		}
		return def
	}}
	get := r.get
	c := &Config{
		HTTPAddr:             get("MAILROOM_HTTP_ADDR", DefaultHTTPAddr),
		DashboardAddr:        get("MAILROOM_DASHBOARD_ADDR", ""),
		SMTPAddr:             get("MAILROOM_SMTP_ADDR", ":2525"),
		DatabaseURL:          get("MAILROOM_DATABASE_URL", "./data/mailroom.db"),
		ServiceDomain:        strings.ToLower(get("MAILROOM_SERVICE_DOMAIN", "mailroom.localhost")),
		PublicURL:            strings.TrimRight(get("MAILROOM_PUBLIC_URL", "http://localhost:8080"), "/"),
		Outbound:             get("MAILROOM_OUTBOUND", "mx"),
		DNSResolver:          get("MAILROOM_DNS_RESOLVER", ""),
		SecretKey:            get("MAILROOM_SECRET_KEY", ""),
		RedisURL:             get("MAILROOM_REDIS_URL", ""),
		InboundHost:          strings.ToLower(get("MAILROOM_INBOUND_HOST", "")),
		HeloName:             get("MAILROOM_HELO_NAME", ""),
		LogLevel:             get("MAILROOM_LOG_LEVEL", "info"),
		LogFormat:            get("MAILROOM_LOG_FORMAT", "json"),
		RelayInsecureSkipTLS: get("MAILROOM_OUTBOUND_INSECURE_TLS", "") == "true",
	}
	r.boolean("MAILROOM_WEBHOOK_ALLOW_PRIVATE", &c.WebhookAllowPrivate)
	r.integer("MAILROOM_RATE_LIMIT", 600, &c.RateLimit)
	r.integer("MAILROOM_RATE_LIMIT_ANONYMOUS", 30, &c.RateLimitAnonymous)
	r.integer("MAILROOM_DOMAIN_LIMIT", 0, &c.DomainLimit)
	r.integer("MAILROOM_SMTP_PORT", 25, &c.SMTPPort)
	r.integer("MAILROOM_DELIVERY_CONCURRENCY", 64, &c.DeliveryConcurrency)
	r.integer("MAILROOM_WEBHOOK_CONCURRENCY", 64, &c.WebhookConcurrency)
	r.integer("MAILROOM_SMTP_MAX_BYTES", 40<<20, &c.SMTPMaxBytes)
	r.integer("MAILROOM_SMTP_MAX_RECIPIENTS", 50, &c.SMTPMaxRecipients)
	r.integer("MAILROOM_SMTP_MAX_SESSIONS", 200, &c.SMTPMaxSessions)
	c.SMTPTLSCert, c.SMTPTLSKey = get("MAILROOM_SMTP_TLS_CERT", ""), get("MAILROOM_SMTP_TLS_KEY", "")
	if (c.SMTPTLSCert == "") != (c.SMTPTLSKey == "") {
		r.fail(fmt.Errorf("MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY go together: set both or neither"))
	}
	if f := c.LogFormat; f != "json" && f != "text" {
		r.fail(fmt.Errorf("MAILROOM_LOG_FORMAT: %q is not json or text", f))
	}
	switch v := get("MAILROOM_LIBCRYPTO", "auto"); v {
	case "auto", "off":
		c.Libcrypto = v == "auto"
	default:
		r.fail(fmt.Errorf("MAILROOM_LIBCRYPTO: %q is not auto or off", v))
	}
	r.duration("MAILROOM_SMTP_TIMEOUT", "2m", time.Second, 0, &c.SMTPTimeout)
	r.duration("MAILROOM_JOB_RESCUE_AFTER", "5m", time.Second, 0, &c.JobRescueAfter)
	r.duration("MAILROOM_OUTBOUND_COMMAND_TIMEOUT", "60s", time.Second, 10*time.Minute, &c.OutboundCommandTimeout)
	r.duration("MAILROOM_NODE_TIMEOUT", "15s", time.Second, 0, &c.NodeTimeout)
	r.duration("MAILROOM_STREAM_WRITE_TIMEOUT", "10s", 100*time.Millisecond, 5*time.Minute, &c.StreamWriteTimeout)
	c.loadPublished(r)
	policy, perrs := loadPolicy(get)
	c.Policy, r.errs = policy, append(r.errs, perrs...)
	feedback, ferrs := loadFeedback(get)
	c.Feedback, r.errs = feedback, append(r.errs, ferrs...)
	limits, lerrs := loadLimits(get)
	c.Limits, r.errs = limits, append(r.errs, lerrs...)
	retention, rerrs := loadRetention(get)
	c.Retention, r.errs = retention, append(r.errs, rerrs...)
	c.loadListeners(r, lookupEnv)
	c.loadFollowers(r)
	if err := c.validate(); err != nil {
		r.fail(err)
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return c, nil
}

// reader reads variables and keeps what is wrong with them, so that Load
// names every wrong variable at once.
type reader struct {
	get  func(k, def string) string // the variable, or def when unset or empty
	errs []error
}

func (r *reader) fail(err error) { r.errs = append(r.errs, err) }

func (r *reader) boolean(k string, dst *bool) {
	v := r.get(k, "false")
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(fmt.Errorf("%s: %q is not true or false", k, v))
	}
	*dst = b
}

func (r *reader) integer(k string, def int, dst *int) {
	v := r.get(k, strconv.Itoa(def))
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		r.fail(fmt.Errorf("%s: %q is not a non-negative integer", k, v))
	}
	*dst = n
}

// duration reads a duration of at least least and, unless most is 0, at
// most most.
func (r *reader) duration(k, def string, least, most time.Duration, dst *time.Duration) {
	v := r.get(k, def)
	d, err := time.ParseDuration(v)
	switch {
	case most == 0 && (err != nil || d < least):
		r.fail(fmt.Errorf("%s: %q is not a duration of at least %s (such as %s)", k, v, short(least), def))
	case most != 0 && (err != nil || d < least || d > most):
		r.fail(fmt.Errorf("%s: %q is not a duration from %s to %s (such as %s)", k, v, short(least), short(most), def))
	}
	*dst = d
}

// short writes d as a person would: 10m, not 10m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// loadPublished reads what the node asks its domains to publish in DNS:
// the outbound addresses and senders their SPF record authorises, and
// where their DMARC reports go.
func (c *Config) loadPublished(r *reader) {
	if v := r.get("MAILROOM_OUTBOUND_IPS", ""); v != "" {
		for _, ip := range strings.Split(v, ",") {
			if ip = strings.TrimSpace(ip); ip == "" {
				continue
			}
			norm, err := parseOutboundIP(ip)
			if err != nil {
				r.fail(err)
				continue
			}
			c.OutboundIPs = append(c.OutboundIPs, norm)
		}
	}
	if v := r.get("MAILROOM_DMARC_RUA", ""); v != "" {
		addr := strings.TrimPrefix(strings.TrimPrefix(v, "mailto:"), "MAILTO:")
		if at := strings.LastIndexByte(addr, '@'); at <= 0 || !isDomainName(strings.ToLower(addr[at+1:])) || strings.ContainsAny(addr, " ;,!") {
			r.fail(fmt.Errorf("MAILROOM_DMARC_RUA: %q is not an email address (such as dmarc-reports@example.com)", v))
		} else {
			c.DMARCRua = "mailto:" + addr
		}
	}
	if v := r.get("MAILROOM_SPF_AUTHORIZE", ""); v != "" {
		for _, term := range strings.FieldsFunc(v, func(ch rune) bool { return ch == ',' || ch == ' ' || ch == '\t' }) {
			norm, err := parseSPFTerm(term)
			if err != nil {
				r.fail(err)
				continue
			}
			c.SPFAuthorize = append(c.SPFAuthorize, norm)
		}
	}
}

// loadFollowers reads the settings whose default follows another one's.
func (c *Config) loadFollowers(r *reader) {
	c.OutboundAllowPrivate = c.WebhookAllowPrivate
	if r.get("MAILROOM_OUTBOUND_ALLOW_PRIVATE", "") != "" {
		r.boolean("MAILROOM_OUTBOUND_ALLOW_PRIVATE", &c.OutboundAllowPrivate)
	}
	if c.InboundHost == "" {
		c.InboundHost = "mx." + c.ServiceDomain
	}
	if c.HeloName == "" {
		c.HeloName = "mail." + c.ServiceDomain
	}
	if c.IsPostgres() {
		c.DataDir = r.get("MAILROOM_DATA_DIR", "./data")
	} else {
		c.DataDir = r.get("MAILROOM_DATA_DIR", filepath.Dir(c.DatabaseURL))
	}
}

// loadListeners reads the listeners besides the API's: inbound SMTP,
// submission and /metrics. Their defaults hang on the TLS certificate and
// the API address, read before.
func (c *Config) loadListeners(r *reader, lookupEnv func(string) (string, bool)) {
	// Set to empty or "off": no inbound listener (tests, API-only nodes).
	if v, set := lookupEnv("MAILROOM_SMTP_ADDR"); c.SMTPAddr == "off" || (set && v == "") {
		c.SMTPAddr = ""
	}
	subDef, subTLSDef := "off", "off"
	if c.SMTPTLSCert != "" {
		subDef, subTLSDef = ":587", ":465"
	}
	c.SubmissionAddr, c.SubmissionTLSAddr = r.get("MAILROOM_SUBMISSION_ADDR", subDef), r.get("MAILROOM_SUBMISSION_TLS_ADDR", subTLSDef)
	if c.SubmissionAddr == "off" {
		c.SubmissionAddr = ""
	}
	if c.SubmissionTLSAddr == "off" {
		c.SubmissionTLSAddr = ""
	}
	if c.SubmissionTLSAddr != "" && c.SMTPTLSCert == "" {
		r.fail(fmt.Errorf("MAILROOM_SUBMISSION_TLS_ADDR: implicit TLS needs MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY"))
	}
	c.MetricsAddr, c.MetricsToken = r.get("MAILROOM_METRICS_ADDR", ""), r.get("MAILROOM_METRICS_TOKEN", "")
	if c.MetricsAddr != "" && c.MetricsAddr == c.HTTPAddr && !strings.HasSuffix(c.MetricsAddr, ":0") { // :0 is two ports
		r.fail(fmt.Errorf("MAILROOM_METRICS_ADDR: %q is MAILROOM_HTTP_ADDR; leave it empty to serve /metrics there", c.MetricsAddr))
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		r.fail(errors.New("MAILROOM_METRICS_TOKEN: must be at least 16 characters (such as `openssl rand -hex 16`)"))
	}
}

// Map is a lookup function over m, for tests and benchmarks: a key present
// with an empty value is set-but-empty, as in the environment.
func Map(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func lookup(getenv func(string) string, k string) (string, bool) {
	v := getenv(k)
	if v == "" {
		return "", false
	}
	return v, true
}

func (c *Config) validate() error {
	var errs []error
	if c.ServiceDomain == "" || strings.ContainsAny(c.ServiceDomain, " /@") {
		errs = append(errs, fmt.Errorf("MAILROOM_SERVICE_DOMAIN: %q is not a host name", c.ServiceDomain))
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("MAILROOM_PUBLIC_URL: %q must be an absolute http(s) URL", c.PublicURL))
	}
	if c.Outbound != "mx" && c.Outbound != OutboundCapture {
		u, err := url.Parse(c.Outbound)
		if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
			errs = append(errs, fmt.Errorf("MAILROOM_OUTBOUND: %q must be mx, smtp://[user:pass@]host:port, smtps://... or capture", c.Outbound))
		}
	}
	if c.RateLimit == 0 {
		errs = append(errs, errors.New("MAILROOM_RATE_LIMIT: must be at least 1"))
	}
	return errors.Join(errs...)
}

// ErrSharedKeyRequired refuses a PostgreSQL node without MAILROOM_SECRET_KEY:
// a key generated per node would leave every other node unable to open the
// secrets and links it seals.
var ErrSharedKeyRequired = errors.New("MAILROOM_SECRET_KEY must be set when MAILROOM_DATABASE_URL is PostgreSQL: " +
	"every node must share one key (generate one, e.g. `openssl rand -hex 32`, and set it on every node)")

// EnsureSecretKey returns the configured secret key or, when none is set on
// SQLite, the one generated on first start into the data directory, so that
// links and encrypted secrets survive restarts of a single node. On
// PostgreSQL it refuses to go without one (ErrSharedKeyRequired).
func (c *Config) EnsureSecretKey() (string, error) {
	if c.SecretKey != "" {
		return c.SecretKey, nil
	}
	if c.IsPostgres() {
		return "", ErrSharedKeyRequired
	}
	path := filepath.Join(c.DataDir, "secret.key")
	if b, err := os.ReadFile(path); err == nil {
		if k := strings.TrimSpace(string(b)); k != "" {
			c.SecretKey = k
			return k, nil
		}
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("creating data directory: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	k := hex.EncodeToString(b)
	// O_EXCL so two processes starting together agree on one key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if os.IsExist(err) {
			c.SecretKey = ""
			return c.EnsureSecretKey()
		}
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(k + "\n"); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	c.SecretKey = k
	return k, nil
}

// parseOutboundIP reads one MAILROOM_OUTBOUND_IPS entry: an IPv4 or IPv6
// address, or a prefix (192.0.2.0/28), as SPF's ip4:/ip6: take them.
func parseOutboundIP(s string) (string, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap().String(), nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String(), nil
	}
	return "", fmt.Errorf("MAILROOM_OUTBOUND_IPS: %q is not an IP address (such as 192.0.2.10 or 2001:db8::10) or prefix (192.0.2.0/28); "+
		"to authorise a smarthost's senders (include:, a:, mx:) use MAILROOM_SPF_AUTHORIZE", s)
}

// parseSPFTerm reads one MAILROOM_SPF_AUTHORIZE term: include:<domain>,
// a, a:<domain>, mx, mx:<domain>, ip4:<address or prefix>, ip6:<...>.
func parseSPFTerm(term string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("MAILROOM_SPF_AUTHORIZE: %q %s (terms are include:<domain>, a, a:<domain>, mx, mx:<domain>, ip4:<address>, ip6:<address>)", term, why)
	}
	t := strings.ToLower(strings.TrimPrefix(term, "+"))
	mech, arg, hasArg := strings.Cut(t, ":")
	switch mech {
	case "a", "mx":
		if !hasArg {
			return mech, nil
		}
	case "include":
		if !hasArg {
			return "", bad("needs a domain")
		}
	case "ip4", "ip6":
		if !hasArg {
			return "", bad("needs an address")
		}
		norm, err := parseOutboundIP(arg)
		if err != nil || (mech == "ip4") != (!strings.Contains(norm, ":")) {
			return "", bad("is not an " + mech + " address")
		}
		return mech + ":" + norm, nil
	default:
		return "", bad("is not an SPF term this setting takes")
	}
	if !isDomainName(arg) {
		return "", bad("does not name a domain")
	}
	return mech + ":" + strings.TrimSuffix(arg, "."), nil
}

func isDomainName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 || !strings.Contains(s, ".") {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
