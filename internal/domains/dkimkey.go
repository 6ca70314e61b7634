package domains

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
)

// dkimKeyBits is 2048: the size RFC 8301 recommends and the largest whose
// public key still fits most DNS hosting panels (split into 255-byte strings).
const dkimKeyBits = 2048

// GenerateKey creates a new DKIM signing key.
func GenerateKey() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, dkimKeyBits)
}

// MarshalPrivateKey encodes key as a PKCS#8 "PRIVATE KEY" PEM block, the form
// stored (sealed) at rest and accepted by go-msgauth's signer after parsing.
func MarshalPrivateKey(key *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		// Only unsupported key types fail, and this is always RSA.
		panic("domains: marshal DKIM key: " + err.Error())
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// ParsePrivateKey reads a PEM key as written by MarshalPrivateKey; PKCS#1
// "RSA PRIVATE KEY" blocks are accepted too, for keys imported from elsewhere.
func ParsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("domains: DKIM key is not PEM")
	}
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("domains: DKIM key: %w", err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("domains: DKIM key is %T, want RSA", k)
		}
		return rk, nil
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("domains: DKIM key: %w", err)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("domains: DKIM key PEM block is %q", block.Type)
	}
}

// DKIMRecordValue is the TXT value publishing pub (RFC 6376 §3.6.1).
func DKIMRecordValue(pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic("domains: marshal DKIM public key: " + err.Error())
	}
	return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
}
