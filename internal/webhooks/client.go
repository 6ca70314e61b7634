package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"mailroom/internal/apierr"
	"mailroom/internal/netpolicy"
)

// Request headers the service writes on every delivery.
const (
	HeaderEvent      = "X-Svc-Event"
	HeaderDeliveryID = "X-Svc-Delivery-Id"
	HeaderRequestID  = "X-Request-Id"
	HeaderSignature  = "X-Svc-Signature"
)

// NewHTTPClient returns the client deliveries go through. Unless
// allowPrivate, it connects only to public addresses, checked at connect time
// after DNS resolution. It never follows redirects (the 3xx is the answer,
// and a failure) and uses no proxy from the environment, which would bypass
// the address check. Its Timeout is the spec's 10 s; Deliver honours a
// shorter one set on the client.
func NewHTTPClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.ControlContext = netpolicy.New(false).Control
	}
	transport := &http.Transport{
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12},
		// Fan-out of thousands of events per second to one receiver needs
		// many warm connections to that one host.
		MaxIdleConns:           2048,
		MaxIdleConnsPerHost:    512,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Attempt is the outcome of one delivery attempt, as stored on a delivery row.
type Attempt struct {
	StatusCode int           // 0 when no answer came
	Body       string        // first ResponseBodyCap bytes of the answer, valid UTF-8
	Duration   time.Duration // from sending to the end of the stored body
	Err        string        // why it failed; empty on success
	RetryAfter time.Duration // endpoint's Retry-After on a non-2xx answer, else 0
	Success    bool          // 2xx within the timeout
	Gone       bool          // 410: disable the endpoint at once
}

// reservedHeader reports whether a static header would clash with what the
// service writes or with the transport's own framing.
func reservedHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Type", HeaderEvent, HeaderDeliveryID, HeaderRequestID, HeaderSignature,
		"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
		"Upgrade", "Te", "Trailer", "Proxy-Connection", "Expect":
		return true
	}
	return false
}

// Deliver POSTs one signed event to url and reports what happened. Static
// headers go first and can never replace the service's own headers or the
// framing ones. Success means a 2xx within the client's timeout (Timeout by
// default). now is used to read an HTTP-date Retry-After.
//
// signed are further signature headers (Svix's, when the endpoint asks for
// them), written after the static ones so that none can replace them.
func Deliver(ctx context.Context, c *http.Client, url string, staticHeaders, signed map[string]string,
	eventID, eventName string, body []byte, signature string, now time.Time) Attempt {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Attempt{Err: "invalid endpoint URL: " + err.Error()}
	}
	for k, v := range staticHeaders {
		if reservedHeader(k) || !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			continue
		}
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderEvent, eventName)
	req.Header.Set(HeaderDeliveryID, eventID)
	req.Header.Set(HeaderRequestID, eventID)
	req.Header.Set(HeaderSignature, signature)
	for k, v := range signed {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Mailroom-Webhooks/1.0")
	}

	// Latency is a real-world measurement, so it reads the wall clock.
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Attempt{Duration: time.Since(start), Err: describeError(ctx, err, timeout)}
	}
	defer resp.Body.Close()

	a := Attempt{StatusCode: resp.StatusCode}
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, ResponseBodyCap+1))
	if len(raw) > ResponseBodyCap {
		raw = raw[:ResponseBodyCap]
		// Read a little more so a modest answer leaves the connection
		// reusable; a huge one is cut off and its connection closed.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	}
	a.Duration = time.Since(start)
	a.Body = storableText(raw)

	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		a.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), now)
		a.Gone = resp.StatusCode == http.StatusGone
		a.Err = fmt.Sprintf("endpoint answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	case readErr != nil && isTimeout(ctx, readErr):
		// The status came in time but the body did not: the answer was not
		// complete within the timeout, so it does not count.
		a.Err = describeError(ctx, readErr, timeout)
	default:
		a.Success = true
	}
	return a
}

// DeliverSigned signs body with secrets exactly as the delivery pool signs
// a delivery (X-Svc-Signature and the Svix-style headers) and POSTs it, so
// that what mailroom listen forwards verifies like a real delivery.
func DeliverSigned(ctx context.Context, c *http.Client, url, eventID, eventName string, body []byte, secrets []string, now time.Time) Attempt {
	return Deliver(ctx, c, url, nil, svixHeaders(eventID, now, body, secrets), eventID, eventName, body, Sign(now, body, secrets...), now)
}

// describeError turns a transport error into the sentence stored on the
// delivery row.
func describeError(ctx context.Context, err error, timeout time.Duration) string {
	var blocked *netpolicy.BlockedError
	var dns *net.DNSError
	switch {
	case errors.As(err, &blocked):
		return blocked.Error()
	case errors.As(err, &dns):
		// Not dns.Error(): it names the node's own DNS server.
		return "could not resolve host " + dns.Name
	case isTimeout(ctx, err):
		return fmt.Sprintf("timeout: no complete answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "delivery cancelled before an answer came"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is already on the endpoint record
	}
	return err.Error()
}

// isTimeout covers both our context deadline and the client's own Timeout,
// which surfaces as a net.Error.
func isTimeout(ctx context.Context, err error) bool {
	var ne net.Error
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// storableText makes an arbitrary answer safe to keep in a text column:
// valid UTF-8 (a cut may split a character) and no NUL, which PostgreSQL
// text refuses.
func storableText(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// maxURLLength keeps stored endpoint URLs reasonable.
const maxURLLength = 2048

// ValidateURL checks an endpoint URL at registration: absolute, https (http
// too when allowPrivate), a host, no user:password, and, unless
// allowPrivate, no literal private address or localhost. Names are checked
// again at connect time, since DNS can change after registration.
func ValidateURL(raw string, allowPrivate bool) error {
	bad := func(format string, args ...any) error {
		return apierr.InvalidRequest("url: "+format, args...)
	}
	if raw == "" {
		return bad("is required")
	}
	if len(raw) > maxURLLength {
		return bad("is longer than %d characters", maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("is not a valid URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	case u.Scheme == "http":
		return bad("must use https")
	case u.Scheme == "":
		return bad("must be absolute, like https://example.com/hooks")
	default:
		return bad("must use https, not %s", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return bad("must have a host, like https://example.com/hooks")
	}
	if u.User != nil {
		return bad("must not carry a user name or password; use static headers for credentials")
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return bad("has an invalid port %q", p)
		}
	}
	if allowPrivate {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return bad("must not point at localhost")
	}
	if a, err := netip.ParseAddr(host); err == nil && !netpolicy.New(false).Allowed(a) {
		return bad("must point at a public address, not %s", a)
	}
	return nil
}

func parsePort(p string) (int, error) {
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return 0, errors.New("out of range")
		}
	}
	return n, nil
}

// ValidateStaticHeaders checks the headers an endpoint wants sent with every
// delivery: valid names and values, and none the service writes itself.
func ValidateStaticHeaders(h map[string]string) error {
	for k, v := range h {
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			return apierr.InvalidRequest("headers: %q is not a valid header name", k)
		case reservedHeader(k):
			return apierr.InvalidRequest("headers: %s is set by the service and cannot be overridden", http.CanonicalHeaderKey(k))
		case !httpguts.ValidHeaderFieldValue(v):
			return apierr.InvalidRequest("headers: the value of %s contains characters not allowed in a header", k)
		}
	}
	return nil
}

// maxRetryAfter keeps absurd Retry-After values from overflowing a Duration;
// anything this long is capped by NextDelay anyway.
const maxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After header (RFC 9110 §10.2.3): either
// delta-seconds or an HTTP-date, relative to now. It returns 0 when the
// value is absent, invalid or in the past, and at most 24 hours.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		if strings.Trim(v, "0123456789") != "" {
			return 0
		}
		// All digits, so the only possible error is overflow.
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// clientRef holds the HTTP client deliveries use; SetTimeout swaps it while
// workers read it.
type clientRef = atomic.Pointer[http.Client]

// SetTimeout changes how long an endpoint has to answer (Timeout by
// default). Tests shorten it so that "sleeps past the timeout" takes
// milliseconds.
func (s *Service) SetTimeout(d time.Duration) {
	c := *s.client.Load()
	c.Timeout = d
	s.client.Store(&c)
}

func (s *Service) timeout() time.Duration { return s.client.Load().Timeout }
