package tracking

import (
	"context"
	"strings"
	"time"
)

// personAgent is the browser a scenario address's person uses.
const personAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"

// Engager plays a person reading a delivered email (opened@, clicked@):
// the message is tracked as the delivery engine would track it, then its
// pixel is loaded and, for a click, its first tracked link followed, by
// the same tokens and recorder as the /t/ routes.
type Engager struct {
	Service *Service
	Links   *Links
}

// Engage records the open (and click); nothing for an untracked email.
func (e Engager) Engage(ctx context.Context, workspaceID, emailID, fromDomain, html string, handedOver time.Time, click bool) error {
	flags, err := e.Service.flagsOf(ctx, e.Service.cfg.DB, workspaceID, emailID)
	if err != nil || flags&(TrackOpens|TrackClicks) == 0 {
		return err
	}
	tracked, err := e.Links.Apply(ctx, workspaceID, emailID, fromDomain, flags, handedOver, html)
	if err != nil {
		return err
	}
	// The gesture of a person, not a scanner's prefetch (see Machine).
	v := Visit{Method: "GET", UserAgent: personAgent, UserActivated: true}
	if tok := tokenAfter(tracked, OpenPath); tok != "" {
		e.Service.Open(tok, v)
	}
	if tok := tokenAfter(tracked, ClickPath); click && tok != "" {
		e.Service.Click(tok, v)
	}
	return nil
}

// tokenAfter is the token of the first URL in html with path, "" when none.
func tokenAfter(html, path string) string {
	i := strings.Index(html, path)
	if i < 0 {
		return ""
	}
	rest := html[i+len(path):]
	if j := strings.IndexAny(rest, "\"'&<> "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
