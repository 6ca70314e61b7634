package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/netpolicy"
)

// MTA-STS (RFC 8461) for direct MX delivery: a receiving domain that
// publishes a policy in enforce mode is only ever reached over TLS with a
// certificate valid for an MX host the policy lists; testing mode delivers
// as before but reports what would have failed. Results go to TLS-RPT
// (RFC 8460) recording: TLSResult per session.

// STS policy modes.
const (
	STSEnforce = "enforce"
	STSTesting = "testing"
	STSNone    = "none"
)

// TLS-RPT result types (RFC 8460 section 4.3) and "success".
const (
	TLSSuccess              = "success"
	TLSStartTLSNotSupported = "starttls-not-supported"
	TLSCertHostMismatch     = "certificate-host-mismatch"
	TLSCertExpired          = "certificate-expired"
	TLSCertNotTrusted       = "certificate-not-trusted"
	TLSValidationFailure    = "validation-failure"
	TLSPolicyFetchError     = "sts-policy-fetch-error"
	TLSPolicyInvalid        = "sts-policy-invalid"
)

// TLSResult is one session's outcome for TLS reporting.
type TLSResult struct {
	PolicyDomain string // the recipient domain
	PolicyType   string // "sts" or "no-policy-found"
	MXHost       string
	Result       string // TLSSuccess or a failure type
	Detail       string
}

// STSResolver is the DNS MTA-STS needs (TXT for _mta-sts, addresses for the
// policy host).
type STSResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// STSPolicy is a fetched policy.
type STSPolicy struct {
	ID      string
	Mode    string
	MX      []string
	MaxAge  time.Duration
	Expires time.Time
}

// Matches reports whether host is one the policy allows (RFC 8461 section
// 4.1: exact, or "*.example.com" for one leftmost label).
func (p *STSPolicy) Matches(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, pat := range p.MX {
		pat = strings.ToLower(strings.TrimSuffix(pat, "."))
		if rest, ok := strings.CutPrefix(pat, "*."); ok {
			if _, after, found := strings.Cut(host, "."); found && after == rest {
				return true
			}
			continue
		}
		if host == pat {
			return true
		}
	}
	return false
}

// mtaSTS fetches and caches policies.
type mtaSTS struct {
	resolver STSResolver
	client   *http.Client
	clock    clock.Clock

	mu    sync.Mutex
	cache map[string]*STSPolicy
}

func newMTASTS(r STSResolver, roots *x509.CertPool, httpsPort int, c clock.Clock, policy *netpolicy.Policy) *mtaSTS {
	port := "443"
	if httpsPort != 0 {
		port = strconv.Itoa(httpsPort)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if policy != nil {
		dialer.ControlContext = policy.Control // the policy host is named by the recipient's DNS
	}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		// Through the configured resolver, as the rest of delivery.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := r.LookupHost(ctx, host)
			if err != nil {
				return nil, err
			}
			var errs []error
			for _, ip := range ips {
				c, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip, port))
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, fmt.Errorf("%s: %w", host, errors.Join(errs...))
		},
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   true,
	}
	return &mtaSTS{
		resolver: r, clock: c, cache: map[string]*STSPolicy{},
		client: &http.Client{
			Transport: tr, Timeout: 20 * time.Second,
			// RFC 8461 section 3.3: redirects are not followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// policy returns domain's policy (nil when it has none), from the cache
// while its id is unchanged and it has not expired. A fetch failure falls
// back to a cached policy (section 5.1); fetchErr reports it either way.
func (m *mtaSTS) policy(ctx context.Context, domain string) (p *STSPolicy, fetchErr error) {
	now := m.clock.Now()
	m.mu.Lock()
	cached := m.cache[domain]
	m.mu.Unlock()
	if cached != nil && !now.Before(cached.Expires) {
		cached = nil
	}
	id, txtErr := m.txtID(ctx, domain)
	if txtErr != nil || id == "" {
		return cached, txtErr
	}
	if cached != nil && cached.ID == id {
		return cached, nil
	}
	p, err := m.fetch(ctx, domain)
	if err != nil {
		return cached, err
	}
	p.ID = id
	p.Expires = now.Add(p.MaxAge)
	m.mu.Lock()
	m.cache[domain] = p
	m.mu.Unlock()
	return p, nil
}

// txtID reads the id of the one v=STSv1 record at _mta-sts.<domain> ("" when
// there is none or more than one, section 3.1).
func (m *mtaSTS) txtID(ctx context.Context, domain string) (string, error) {
	txts, err := m.resolver.LookupTXT(ctx, "_mta-sts."+domain)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return "", nil
		}
		return "", err
	}
	id, n := "", 0
	for _, t := range txts {
		if !strings.HasPrefix(t, "v=STSv1") {
			continue
		}
		n++
		for f := range strings.SplitSeq(t, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(f), "="); ok && k == "id" {
				id = v
			}
		}
	}
	if n != 1 {
		return "", nil
	}
	return id, nil
}

func (m *mtaSTS) fetch(ctx context.Context, domain string) (*STSPolicy, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://mta-sts."+domain+"/.well-known/mta-sts.txt", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mta-sts policy of %s: %w", domain, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("mta-sts policy of %s: HTTP %d", domain, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "text/plain") {
		return nil, fmt.Errorf("mta-sts policy of %s: content type %q", domain, ct)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	return ParseSTSPolicy(string(body))
}

// ParseSTSPolicy reads a policy file (RFC 8461 section 3.2).
func ParseSTSPolicy(s string) (*STSPolicy, error) {
	p := &STSPolicy{}
	version := ""
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "version":
			version = v
		case "mode":
			p.Mode = v
		case "mx":
			p.MX = append(p.MX, v)
		case "max_age":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 31557600 {
				return nil, fmt.Errorf("mta-sts: max_age %q", v)
			}
			p.MaxAge = time.Duration(n) * time.Second
		}
	}
	if version != "STSv1" {
		return nil, fmt.Errorf("mta-sts: version %q", version)
	}
	switch p.Mode {
	case STSEnforce, STSTesting:
		if len(p.MX) == 0 {
			return nil, errors.New("mta-sts: no mx")
		}
	case STSNone:
	default:
		return nil, fmt.Errorf("mta-sts: mode %q", p.Mode)
	}
	if p.MaxAge == 0 {
		return nil, errors.New("mta-sts: no max_age")
	}
	return p, nil
}

// tlsFailure names a strict session's failure for TLS-RPT.
func tlsFailure(err error) string {
	var certErr *tls.CertificateVerificationError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.Is(err, errNoStartTLS):
		return TLSStartTLSNotSupported
	case errors.As(err, &hostErr):
		return TLSCertHostMismatch
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return TLSCertExpired
	case errors.As(err, &unknown):
		return TLSCertNotTrusted
	case errors.As(err, &certErr):
		return TLSValidationFailure
	}
	return ""
}
