package inbound_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestStartTLS: with MAILROOM_SMTP_TLS_CERT and _KEY the listener offers
// STARTTLS, and mail sent after it is stored.
func TestStartTLS(t *testing.T) {
	cfg, pool := smtpsink.SelfSigned(t)
	dir := t.TempDir()
	cert := cfg.Certificates[0]
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	a, inbox := startSMTP(t, testapp.WithEnv("MAILROOM_SMTP_TLS_CERT", certFile), testapp.WithEnv("MAILROOM_SMTP_TLS_KEY", keyFile))

	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	name := "localhost"
	if len(leaf.DNSNames) > 0 {
		name = leaf.DNSNames[0]
	}
	c, err := smtp.DialStartTLS(a.SMTPAddr(), &tls.Config{RootCAs: pool, ServerName: name})
	if err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	defer c.Close()
	if err := c.Mail("a@b.example", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt(inbox, nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "Subject: over tls\r\n\r\nsecret\r\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r := a.Do("GET", "/v1/messages", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"subject":"over tls"`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
