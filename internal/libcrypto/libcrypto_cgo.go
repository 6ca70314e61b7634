//go:build cgo && unix

package libcrypto

import (
	"crypto"
	"crypto/rsa"
	"errors"
	"io"
	"math/big"
	"sync"

	"github.com/golang-fips/openssl/v2"
	"github.com/golang-fips/openssl/v2/bbig"
)

// withCgo says this build can load libcrypto.
const withCgo = true

// candidates are the libcrypto sonames tried in order: OpenSSL 3, then 1.1.
var candidates = []string{"libcrypto.so.3", "libcrypto.so.1.1"}

var load = sync.OnceValues(func() (string, bool) {
	for _, name := range candidates {
		// Init takes only its first call into account: look before loading.
		if ok, _ := openssl.CheckVersion(name); !ok {
			continue
		}
		if openssl.Init(name) != nil {
			return "", false
		}
		return openssl.VersionText(), true
	}
	return "", false
})

// signer signs SHA-256 PKCS #1 v1.5 digests with libcrypto and anything
// else with the Go key.
type signer struct {
	key *rsa.PrivateKey
	ssl *openssl.PrivateKeyRSA
}

func newSigner(key *rsa.PrivateKey) (crypto.Signer, error) {
	if len(key.Primes) != 2 {
		return nil, errors.New("libcrypto: only two-prime keys")
	}
	// The CRT values are computed here, not by key.Precompute: keys are
	// shared, and Precompute writes to them.
	p, q, one := key.Primes[0], key.Primes[1], big.NewInt(1)
	dp := new(big.Int).Mod(key.D, new(big.Int).Sub(p, one))
	dq := new(big.Int).Mod(key.D, new(big.Int).Sub(q, one))
	qinv := new(big.Int).ModInverse(q, p)
	if qinv == nil {
		return nil, errors.New("libcrypto: q has no inverse mod p")
	}
	ssl, err := openssl.NewPrivateKeyRSA(bbig.Enc(key.N), bbig.Enc(big.NewInt(int64(key.E))), bbig.Enc(key.D),
		bbig.Enc(p), bbig.Enc(q), bbig.Enc(dp), bbig.Enc(dq), bbig.Enc(qinv))
	if err != nil {
		return nil, err
	}
	return &signer{key: key, ssl: ssl}, nil
}

func (s *signer) Public() crypto.PublicKey { return &s.key.PublicKey }

func (s *signer) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if _, pss := opts.(*rsa.PSSOptions); pss || opts.HashFunc() != crypto.SHA256 {
		return s.key.Sign(rand, digest, opts)
	}
	return openssl.SignRSAPKCS1v15(s.ssl, crypto.SHA256, digest)
}
