package delivery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"mailroom/internal/outbound"
	"mailroom/internal/store"
)

// signerTTL bounds how long a looked-up key is reused: long enough that a
// burst of sends from one domain reads and decrypts its key once, short
// enough that a rotated key takes over within a minute.
const signerTTL = time.Minute

type cachedSigner struct {
	signer *outbound.Signer
	bounce string // the Return-Path domain
	until  time.Time
}

type signerCache struct {
	mu sync.Mutex
	m  map[string]cachedSigner
}

// signer returns the DKIM signer for the email's From domain: the service
// domain's key for the sandbox sender, else the workspace's verified domain
// key. Nil (unsigned) only when no Keys are wired.
func (s *Service) signer(ctx context.Context, e *email) (*outbound.Signer, error) {
	c, err := s.identity(ctx, e)
	return c.signer, err
}

// returnPath is the email's envelope sender: the signed bounces+<id>-<tag>
// at its domain's Return-Path domain.
func (s *Service) returnPath(ctx context.Context, e *email) (string, error) {
	c, err := s.identity(ctx, e)
	if err != nil {
		return "", err
	}
	return s.verp.Address(e.ID, c.bounce), nil
}

// identity is the signer and Return-Path domain of the email's From
// domain, looked up once a minute per domain.
func (s *Service) identity(ctx context.Context, e *email) (cachedSigner, error) {
	keys := s.keys.Load().k
	if keys == nil {
		return cachedSigner{bounce: e.fromDomain()}, nil
	}
	domain := e.fromDomain()
	sandbox := domain == s.svcDomain
	key := e.WorkspaceID + "\x00" + domain
	if sandbox {
		key = "\x00service"
	}
	now := s.clock.Now()
	s.signers.mu.Lock()
	if c, ok := s.signers.m[key]; ok && now.Before(c.until) {
		s.signers.mu.Unlock()
		return c, nil
	}
	s.signers.mu.Unlock()

	c := cachedSigner{bounce: domain, until: now.Add(signerTTL)}
	if sandbox {
		d, sel, k, err := keys.ServiceKey(ctx)
		if err != nil {
			return c, fmt.Errorf("delivery: service domain key: %w", err)
		}
		c.signer = outbound.NewSigner(d, sel, k)
	} else {
		sel, k, err := keys.SigningKey(ctx, e.WorkspaceID, domain)
		if errors.Is(err, store.ErrNotFound) {
			return c, permanentError{fmt.Errorf("the sending domain %s is no longer verified on the workspace", domain)}
		}
		if err != nil {
			return c, fmt.Errorf("delivery: signing key of %s: %w", domain, err)
		}
		c.signer = outbound.NewSigner(domain, sel, k)
		if c.bounce, err = keys.ReturnPathDomain(ctx, e.WorkspaceID, domain); err != nil {
			return c, fmt.Errorf("delivery: return path of %s: %w", domain, err)
		}
	}
	s.signers.mu.Lock()
	if s.signers.m == nil {
		s.signers.m = map[string]cachedSigner{}
	}
	s.signers.m[key] = c
	s.signers.mu.Unlock()
	return c, nil
}
