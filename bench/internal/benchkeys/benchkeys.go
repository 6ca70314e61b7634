// Package benchkeys is the DKIM key source the delivery benchmarks hand the
// engine: one key for every domain and the service domain, selector s1,
// so signing costs what it costs in production without a verified domain.
package benchkeys

import (
	"context"
	"crypto"
)

// Keys implements delivery.Keys with one key.
type Keys struct{ Key crypto.Signer }

// SigningKey answers the one key for every domain.
func (k Keys) SigningKey(context.Context, string, string) (string, crypto.Signer, error) {
	return "s1", k.Key, nil
}

// ServiceKey answers the one key for the service domain.
func (k Keys) ServiceKey(context.Context) (string, string, crypto.Signer, error) {
	return "mailroom.localhost", "s1", k.Key, nil
}

// ReturnPathDomain keeps each domain's own Return-Path.
func (Keys) ReturnPathDomain(_ context.Context, _, domain string) (string, error) {
	return domain, nil
}
