package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/mailauth"
	"mailroom/internal/netpolicy"
)

// MX is one mail exchanger of a domain.
type MX struct {
	Host string
	Pref uint16
}

// MXResolver is the DNS the MX transport needs. A name that does not exist
// should be reported as a *net.DNSError with IsNotFound set: that is what
// makes the failure permanent rather than a retry.
type MXResolver interface {
	LookupMX(ctx context.Context, domain string) ([]MX, error)
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// MXOptions tunes direct delivery. Zero values pick the defaults given per
// field.
type MXOptions struct {
	// Port is the SMTP port on every exchanger. Default 25; tests point it
	// at a sink.
	Port int
	// HeloName is the name sent in EHLO; it should resolve back to the
	// sending IP. Default "localhost".
	HeloName string
	// MaxConnsPerHost caps concurrent sessions to one exchanger. Default 10.
	MaxConnsPerHost int
	// MaxMessagesPerConn closes a session after this many messages.
	// Default 100.
	MaxMessagesPerConn int
	// IdleTimeout discards pooled sessions idle longer than this.
	// Default 30s.
	IdleTimeout time.Duration
	// DialTimeout bounds each TCP connect. Default 30s.
	DialTimeout time.Duration
	// CommandTimeout bounds each SMTP reply (twice that after DATA).
	// Default: go-smtp's 5 minutes.
	CommandTimeout time.Duration
	// Clock times idle sessions. Default clock.Real.
	Clock clock.Clock
	// STSResolver turns MTA-STS (RFC 8461) on: policies are discovered
	// and fetched through it. Nil: no MTA-STS.
	STSResolver STSResolver
	// RootCAs verifies MTA-STS policy hosts and the MX hosts of enforce
	// and testing policies. Default: the system roots.
	RootCAs *x509.CertPool
	// STSPort is the HTTPS port policies are fetched from. Default 443;
	// tests point it at a local server.
	STSPort int
	// OnTLSResult receives each MTA-STS session's outcome (TLS-RPT, RFC
	// 8460): success or the failure type. May be nil.
	OnTLSResult func(TLSResult)
	// Policy, when set, judges every address an exchanger or an MTA-STS
	// policy host resolves to before it is dialled: DNS is the sender's
	// to write, and must not steer delivery into the operator's network.
	// Nil: any address (outbound's own tests).
	Policy *netpolicy.Policy
}

// MXTransport delivers straight to each recipient domain's exchangers.
// STARTTLS is opportunistic (RFC 3207 section 4.1 as practised: any
// certificate is accepted, and a failed handshake falls back to plaintext).
type MXTransport struct {
	resolver MXResolver
	port     string
	sess     *session
	strict   *session // MTA-STS: verified TLS or nothing
	sts      *mtaSTS
	onTLS    func(TLSResult)
	pool     *pool
}

var _ Transport = (*MXTransport)(nil)

// NewMX returns a direct-delivery transport using resolver for DNS.
func NewMX(resolver MXResolver, opts MXOptions) *MXTransport {
	port := opts.Port
	if port == 0 {
		port = 25
	}
	s := &session{
		helo:           opts.HeloName,
		tls:            &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10}, //nolint:gosec // opportunistic TLS: encryption without authentication beats plaintext
		opportunistic:  true,
		dialTimeout:    opts.DialTimeout,
		commandTimeout: opts.CommandTimeout,
		policy:         opts.Policy,
	}
	if s.helo == "" {
		s.helo = "localhost"
	}
	if s.dialTimeout == 0 {
		s.dialTimeout = 30 * time.Second
	}
	t := &MXTransport{resolver: resolver, port: strconv.Itoa(port), sess: s, onTLS: opts.OnTLSResult}
	if opts.STSResolver != nil {
		c := opts.Clock
		if c == nil {
			c = clock.Real{}
		}
		t.sts = newMTASTS(opts.STSResolver, opts.RootCAs, opts.STSPort, c, opts.Policy)
		t.strict = &session{
			helo: s.helo, tls: &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
			requireTLS:  func(string) bool { return true },
			dialTimeout: s.dialTimeout, commandTimeout: s.commandTimeout, policy: opts.Policy,
		}
	}
	t.pool = newPool(t.dial, poolConfig{
		maxConns: opts.MaxConnsPerHost, idleTimeout: opts.IdleTimeout,
		maxMsgs: opts.MaxMessagesPerConn, clock: opts.Clock,
	})
	return t
}

// dial opens a session to exchanger addr (name:port), trying each of its
// addresses in turn. A key "sts|<domain>|<addr>" asks for a session under
// the domain's MTA-STS policy: authenticated TLS or none, its outcome
// reported.
func (t *MXTransport) dial(ctx context.Context, key string) (*conn, error) {
	source, key := cutSource(key)
	addr, sess, domain := key, t.sess, ""
	if rest, ok := strings.CutPrefix(key, "sts|"); ok && t.strict != nil {
		domain, addr, _ = strings.Cut(rest, "|")
		sess = t.strict
	}
	c, err := t.dialWith(ctx, sess, addr, source)
	if domain != "" && t.onTLS != nil {
		host, _, _ := net.SplitHostPort(addr)
		r := TLSResult{PolicyDomain: domain, PolicyType: "sts", MXHost: host, Result: TLSSuccess}
		if err != nil {
			r.Result, r.Detail = tlsFailure(err), err.Error()
		}
		if r.Result != "" {
			t.onTLS(r)
		}
	}
	return c, err
}

func (t *MXTransport) dialWith(ctx context.Context, sess *session, addr, source string) (*conn, error) {
	host, port, _ := net.SplitHostPort(addr)
	ips := []string{host}
	if net.ParseIP(host) == nil {
		var err error
		if ips, err = t.resolver.LookupHost(ctx, host); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, ip := range ips {
		cn, err := sess.open(ctx, addr, ip, port, host, source)
		if err == nil {
			cn.host = addr
			return cn, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ip, err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	return nil, errors.Join(errs...)
}

// Send groups the recipients by domain and runs one transaction per domain,
// the domains in parallel.
func (t *MXTransport) Send(ctx context.Context, env Envelope, data []byte) (*Result, error) {
	if err := validEnvelope(env); err != nil {
		return nil, err
	}
	var domains []string
	groups := map[string][]string{}
	for _, r := range env.To {
		d := mailauth.DomainOf(r)
		if _, ok := groups[d]; !ok {
			domains = append(domains, d)
		}
		groups[d] = append(groups[d], r)
	}
	results := make([]*Result, len(domains))
	errs := make([]error, len(domains))
	if len(domains) == 1 {
		results[0], errs[0] = t.sendDomain(ctx, domains[0], Envelope{From: env.From, To: groups[domains[0]], Source: env.Source}, data)
	} else {
		var wg sync.WaitGroup
		for i, d := range domains {
			wg.Go(func() {
				results[i], errs[i] = t.sendDomain(ctx, d, Envelope{From: env.From, To: groups[d], Source: env.Source}, data)
			})
		}
		wg.Wait()
	}

	// Back in envelope order, so callers can zip results with recipients.
	byRcpt := make(map[string]RcptResult, len(env.To))
	res := &Result{}
	for _, r := range results {
		if res.Host == "" {
			res.Host = r.Host
		}
		for _, rr := range r.Rcpts {
			byRcpt[rr.Rcpt] = rr
		}
	}
	for _, r := range env.To {
		res.Rcpts = append(res.Rcpts, byRcpt[r])
	}
	var failed error
	for _, err := range errs {
		if err == nil {
			return res, nil // somebody answered
		}
		if failed == nil {
			failed = err
		}
	}
	return res, failed
}

// sendDomain tries the domain's exchangers in preference order until one
// answers.
func (t *MXTransport) sendDomain(ctx context.Context, domain string, env Envelope, data []byte) (*Result, error) {
	hosts, err := t.exchangers(ctx, domain)
	if err != nil {
		se := &SendError{Temporary: !isNotFound(err), Err: err}
		var perm *SendError
		if errors.As(err, &perm) {
			se = perm
		}
		return &Result{Rcpts: failAll(env.To, "", se.Err, se.Temporary)}, se
	}
	pol := t.stsPolicy(ctx, domain)
	if pol != nil && pol.Mode == STSEnforce {
		kept := hosts[:0:0]
		for _, h := range hosts {
			if pol.Matches(h) {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			err := fmt.Errorf("no MX host of %s matches its MTA-STS policy (%s)", domain, strings.Join(pol.MX, ", "))
			t.report(TLSResult{PolicyDomain: domain, PolicyType: "sts", MXHost: strings.Join(hosts, ","), Result: TLSValidationFailure, Detail: err.Error()})
			return &Result{Rcpts: failAll(env.To, "", err, true)}, &SendError{Temporary: true, Err: err}
		}
		hosts = kept
	}
	var lastRes *Result
	var lastErr error
	for _, h := range hosts {
		addr := net.JoinHostPort(h, t.port)
		res := &Result{Host: addr}
		run := func(cn *conn) error {
			rcpts, err := transact(cn, addr, env, data)
			for i := range rcpts {
				rcpts[i].Session.MTASTS = t.stsMode(pol)
			}
			res.Rcpts = rcpts
			return err
		}
		var err error
		if pol != nil && pol.Matches(h) {
			err = t.pool.do(ctx, sourceKey(env.Source, "sts|"+domain+"|"+addr), run)
			if err != nil && pol.Mode == STSTesting && tlsFailure(err) != "" {
				// Testing mode: the failure is reported, the mail goes
				// as it would without a policy.
				err = t.pool.do(ctx, sourceKey(env.Source, addr), run)
			}
		} else {
			err = t.pool.do(ctx, sourceKey(env.Source, addr), run)
		}
		if err == nil {
			return res, nil
		}
		lastRes, lastErr = finishFailed(res, env.To, addr, err)
		if lastErr == nil || ctx.Err() != nil {
			// Some recipients got an answer: the transaction happened and
			// must not be repeated on the next exchanger.
			return lastRes, lastErr
		}
	}
	return lastRes, lastErr
}

// stsPolicy is the domain's MTA-STS policy in force (enforce or testing),
// nil when it has none or MTA-STS is off. A policy that cannot be fetched
// and is not cached counts as none, and is reported.
func (t *MXTransport) stsPolicy(ctx context.Context, domain string) *STSPolicy {
	if t.sts == nil {
		return nil
	}
	p, err := t.sts.policy(ctx, domain)
	if err != nil {
		t.report(TLSResult{PolicyDomain: domain, PolicyType: "sts", Result: TLSPolicyFetchError, Detail: err.Error()})
	}
	if p == nil || p.Mode == STSNone {
		return nil
	}
	return p
}

// stsMode names the policy an attempt went under for its story: enforce,
// testing or none; "" when MTA-STS is off.
func (t *MXTransport) stsMode(pol *STSPolicy) string {
	switch {
	case t.sts == nil:
		return ""
	case pol == nil:
		return "none"
	}
	return string(pol.Mode)
}

func (t *MXTransport) report(r TLSResult) {
	if t.onTLS != nil {
		t.onTLS(r)
	}
}

// exchangers lists the hosts to try: MX records by preference (RFC 5321
// section 5.1), or the domain itself when it has none.
func (t *MXTransport) exchangers(ctx context.Context, domain string) ([]string, error) {
	if domain == "" {
		return nil, &SendError{Err: errors.New("recipient has no domain")}
	}
	mxs, err := t.resolver.LookupMX(ctx, domain)
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	if len(mxs) == 0 {
		// Implicit MX: the domain's own address records, if any.
		if _, err := t.resolver.LookupHost(ctx, domain); err != nil {
			return nil, err
		}
		return []string{domain}, nil
	}
	slices.SortStableFunc(mxs, func(a, b MX) int { return int(a.Pref) - int(b.Pref) })
	hosts := make([]string, 0, len(mxs))
	for _, mx := range mxs {
		h := strings.TrimSuffix(mx.Host, ".")
		if h == "" {
			// Null MX (RFC 7505): the domain accepts no mail at all.
			return nil, &SendError{Err: fmt.Errorf("%s publishes a null MX and accepts no mail", domain)}
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// Close ends the idle pooled sessions; Send may still be called after.
func (t *MXTransport) Close() error {
	t.pool.close()
	return nil
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
