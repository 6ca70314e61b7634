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
	keys := s.keys.Load().k
	if keys == nil {
		return nil, nil
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
		return c.signer, nil
	}
	s.signers.mu.Unlock()

	var sg *outbound.Signer
	if sandbox {
		d, sel, k, err := keys.ServiceKey(ctx)
		if err != nil {
			return nil, fmt.Errorf("delivery: service domain key: %w", err)
		}
		sg = outbound.NewSigner(d, sel, k)
	} else {
		sel, k, err := keys.SigningKey(ctx, e.WorkspaceID, domain)
		if errors.Is(err, store.ErrNotFound) {
			return nil, permanentError{fmt.Errorf("the sending domain %s is no longer verified on the workspace", domain)}
		}
		if err != nil {
			return nil, fmt.Errorf("delivery: signing key of %s: %w", domain, err)
		}
		sg = outbound.NewSigner(domain, sel, k)
	}
	s.signers.mu.Lock()
	if s.signers.m == nil {
		s.signers.m = map[string]cachedSigner{}
	}
	s.signers.m[key] = cachedSigner{signer: sg, until: now.Add(signerTTL)}
	s.signers.mu.Unlock()
	return sg, nil
}
