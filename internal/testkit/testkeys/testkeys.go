// Package testkeys hands tests RSA-2048 DKIM keys generated once, ahead of
// time, and kept in keys.pem: generating one takes tens of milliseconds to
// seconds on a busy machine, and every test node would otherwise make three
// for its workspace's own domain and three more per domain a test adds.
// These keys sign test mail only; never use them anywhere else.
package testkeys

import (
	"crypto/rsa"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"fmt"
	"sync"
	"sync/atomic"
)

//go:embed keys.pem
var keysPEM []byte

// pool is keys.pem parsed, once per process.
var pool = sync.OnceValue(func() []*rsa.PrivateKey {
	var keys []*rsa.PrivateKey
	rest := keysPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			panic(fmt.Sprintf("testkeys: keys.pem: %v", err))
		}
		keys = append(keys, k.(*rsa.PrivateKey))
	}
	if len(keys) < 4 {
		panic("testkeys: keys.pem holds fewer than 4 keys")
	}
	return keys
})

// Source returns a key source for the domains service (app.Options.DKIMKeys):
// each call answers the next key of the pool, so the three keys of one
// domain differ, and after the pool is used up it starts over. It never
// answers Spare.
func Source() func() (*rsa.PrivateKey, error) {
	var next atomic.Uint64
	return func() (*rsa.PrivateKey, error) {
		keys := pool()
		n := uint64(len(keys) - 1) // the last one is Spare
		return keys[(next.Add(1)-1)%n], nil
	}
}

// Key returns the i-th key of the pool (modulo its size, Spare excluded),
// for tests that need a fixed key of their own.
func Key(i int) *rsa.PrivateKey {
	keys := pool()
	return keys[i%(len(keys)-1)]
}

// Spare is a key Source never hands out: the key a test publishes in place
// of a domain's own to see verification fail.
func Spare() *rsa.PrivateKey {
	keys := pool()
	return keys[len(keys)-1]
}
