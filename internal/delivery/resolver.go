package delivery

import (
	"context"
	"errors"
	"net"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/outbound"
)

// mxResolver adapts dnsresolve to outbound.MXResolver; a name that does not
// exist becomes a *net.DNSError with IsNotFound, which the MX transport
// treats as permanent.
type mxResolver struct{ r *dnsresolve.Resolver }

// NewMXResolver returns the resolver direct MX delivery uses.
func NewMXResolver(r *dnsresolve.Resolver) outbound.MXResolver { return mxResolver{r} }

func (m mxResolver) LookupMX(ctx context.Context, domain string) ([]outbound.MX, error) {
	mxs, err := m.r.LookupMX(ctx, domain)
	if err != nil {
		return nil, notFound(domain, err)
	}
	out := make([]outbound.MX, len(mxs))
	for i, mx := range mxs {
		out[i] = outbound.MX{Host: mx.Host, Pref: mx.Pref}
	}
	return out, nil
}

func (m mxResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	addrs, err := m.r.LookupHost(ctx, host)
	if err != nil {
		return nil, notFound(host, err)
	}
	return addrs, nil
}

// LookupTXT serves MTA-STS discovery (outbound.STSResolver).
func (m mxResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	txts, err := m.r.LookupTXT(ctx, name)
	if err != nil {
		return nil, notFound(name, err)
	}
	return txts, nil
}

// NewSTSResolver returns the resolver MTA-STS discovery uses.
func NewSTSResolver(r *dnsresolve.Resolver) outbound.STSResolver { return mxResolver{r} }

func notFound(name string, err error) error {
	if errors.Is(err, dnsresolve.ErrNotFound) {
		return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	return err
}
