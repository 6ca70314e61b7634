package outbound

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	"github.com/emersion/go-msgauth/dkim"
)

// signedHeaders are the fields a DKIM signature covers (RFC 6376 section
// 5.4.1 recommendations plus the MIME fields, so a relay cannot swap the
// body structure). Fields absent from a message are listed too: a verifier
// then fails if someone adds one later (RFC 6376 section 5.4.2).
var signedHeaders = []string{
	"From", "To", "Cc", "Subject", "Date", "Message-ID", "Reply-To",
	"MIME-Version", "Content-Type", "In-Reply-To", "References",
	"List-Unsubscribe", "List-Unsubscribe-Post", // RFC 8058 section 4: both must be signed
}

// Signer adds a DKIM-Signature for one domain and selector.
type Signer struct {
	domain, selector string
	key              crypto.Signer
}

// NewSigner returns a Signer; key must be an RSA or Ed25519 private key.
func NewSigner(domain, selector string, key crypto.Signer) *Signer {
	return &Signer{domain: domain, selector: selector, key: key}
}

// Sign returns raw with one DKIM-Signature header field prepended
// (relaxed/relaxed canonicalization, SHA-256).
func (s *Signer) Sign(raw []byte) ([]byte, error) {
	ds, err := dkim.NewSigner(&dkim.SignOptions{
		Domain:                 s.domain,
		Selector:               s.selector,
		Signer:                 s.key,
		Hash:                   crypto.SHA256,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed,
		BodyCanonicalization:   dkim.CanonicalizationRelaxed,
		HeaderKeys:             signedHeaders,
	})
	if err != nil {
		return nil, fmt.Errorf("outbound: dkim: %w", err)
	}
	if _, err := ds.Write(raw); err != nil {
		ds.Close()
		return nil, fmt.Errorf("outbound: dkim: %w", err)
	}
	if err := ds.Close(); err != nil {
		return nil, fmt.Errorf("outbound: dkim: %w", err)
	}
	sig := ds.Signature()
	out := bytes.NewBuffer(make([]byte, 0, len(sig)+len(raw)))
	out.WriteString(sig)
	out.Write(raw)
	return out.Bytes(), nil
}

// DKIMPublicRecord returns the TXT record value to publish at
// <selector>._domainkey.<domain> for pub: "v=DKIM1; k=rsa; p=<base64 DER>"
// (SubjectPublicKeyInfo for RSA, the raw 32 bytes for Ed25519 per RFC 8463).
func DKIMPublicRecord(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			return "", err
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der), nil
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(k), nil
	default:
		return "", fmt.Errorf("outbound: dkim: unsupported public key type %T", pub)
	}
}
