package outbound

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/emersion/go-msgauth/dkim"
)

// overSigned are the fields a signature covers once more than the message
// has them (RFC 6376 section 8.15): a verifier then fails when anyone adds
// a second From, Subject, Date, To or Message-ID above the signed one,
// which is what a display-name or subject spoof needs.
var overSigned = []string{"From", "Subject", "Date", "To", "Message-ID"}

// signedWhenPresent are covered as often as they appear: the unsubscribe
// headers (RFC 8058 section 4 requires List-Unsubscribe and
// List-Unsubscribe-Post to be signed), Gmail's Feedback-ID, the addressing
// fields and the MIME fields, so a relay cannot swap the body structure.
var signedWhenPresent = []string{
	"Sender", "Reply-To", "Cc", "List-Unsubscribe", "List-Unsubscribe-Post", "List-Id",
	"Feedback-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding",
	"In-Reply-To", "References",
}

// headerKeys is the h= list for raw: every over-signed field one time more
// than present, every other listed field as many times as present.
func headerKeys(raw []byte) []string {
	counts := map[string]int{}
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break // end of the header
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, _, ok := bytes.Cut(line, []byte(":")); ok {
			counts[strings.ToLower(string(bytes.TrimSpace(k)))]++
		}
	}
	var keys []string
	for _, k := range overSigned {
		for range counts[strings.ToLower(k)] + 1 {
			keys = append(keys, k)
		}
	}
	for _, k := range signedWhenPresent {
		for range counts[strings.ToLower(k)] {
			keys = append(keys, k)
		}
	}
	return keys
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
		HeaderKeys:             headerKeys(raw),
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
