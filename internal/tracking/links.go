package tracking

import (
	"context"
	"net/url"
	"strings"
	"time"
)

// HostLookup returns the custom tracking host of a workspace's sending
// domain, "" for the shared host (domains.Service.TrackingHost).
type HostLookup func(ctx context.Context, workspaceID, domain string) (string, error)

// Links rewrites a tracked message at delivery, where it costs the send
// path nothing: the accepting request only books the flags.
type Links struct {
	Rewriter Rewriter
	Host     HostLookup
}

// NewLinks returns Links for the node's public URL and secret.
func NewLinks(signer Signer, publicURL string, host HostLookup) *Links {
	return &Links{Rewriter: Rewriter{Signer: signer, PublicURL: strings.TrimRight(publicURL, "/")}, Host: host}
}

// Apply returns the html of an email with its tracking, built at (the
// hand-over time the tokens carry).
func (l *Links) Apply(ctx context.Context, workspaceID, emailID, fromDomain string, flags int, at time.Time, html string) (string, error) {
	if l == nil || flags == 0 || html == "" {
		return html, nil
	}
	base := l.Rewriter.PublicURL
	if l.Host != nil {
		h, err := l.Host(ctx, workspaceID, fromDomain)
		if err != nil {
			return "", err
		}
		if h != "" {
			scheme := "https"
			if u, err := url.Parse(base); err == nil && u.Scheme != "" {
				scheme = u.Scheme
			}
			base = scheme + "://" + h
		}
	}
	return l.Rewriter.Rewrite(html, base, Link{WorkspaceID: workspaceID, EmailID: emailID, Issued: at.Truncate(time.Second)}, flags), nil
}
