// Package libcrypto signs with RSA through the system's OpenSSL libcrypto
// when the binary is built with cgo and the library loads, and through Go's
// crypto/rsa otherwise. The signatures are the same bytes either way
// (PKCS #1 v1.5 is deterministic); libcrypto's are about four times
// cheaper, and every message a node sends carries one.
package libcrypto

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"slices"
	"sync/atomic"
)

var disabled atomic.Bool

// Use turns libcrypto on (the default) or off for keys wrapped from now on;
// off means every signature is made by crypto/rsa.
func Use(on bool) { disabled.Store(!on) }

// Loaded says whether libcrypto is in use for new keys, and which version.
func Loaded() (version string, ok bool) {
	if disabled.Load() {
		return "", false
	}
	return load()
}

// WhyNot says why libcrypto is not in use: "" when it is, "off" when
// turned off, "built without cgo" or "not found" (no loadable library).
func WhyNot() string {
	switch _, ok := Loaded(); {
	case ok:
		return ""
	case disabled.Load():
		return "off"
	case !withCgo:
		return "built without cgo"
	}
	return "not found"
}

// Signer returns a crypto.Signer for key that makes PKCS #1 v1.5 SHA-256
// signatures with libcrypto, or key itself when libcrypto is off, missing,
// or does not sign as crypto/rsa does: the first signature is checked
// against crypto/rsa's, so a key that went wrong on its way into the
// library is never used.
func Signer(key *rsa.PrivateKey) crypto.Signer {
	if _, ok := Loaded(); !ok {
		return key
	}
	s, err := newSigner(key)
	if err != nil {
		return key
	}
	d := sha256.Sum256([]byte("mailroom libcrypto check"))
	want, err1 := rsa.SignPKCS1v15(nil, key, crypto.SHA256, d[:])
	got, err2 := s.Sign(nil, d[:], crypto.SHA256)
	if err1 != nil || err2 != nil || !slices.Equal(want, got) {
		return key
	}
	return s
}
