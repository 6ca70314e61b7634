package submission_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestNodeClients runs the official Resend Node SDK and nodemailer, which
// no one here wrote, against a node (testdata/node/clients.mjs): send with
// idempotency, tags, attachments and scheduling, batch, get, list, update,
// cancel, domains, API keys, webhooks verify; nodemailer over STARTTLS with
// an API key. The packages are installed into testdata/node by npm (pinned
// in its package.json); without node, npm or the registry the test skips.
func TestNodeClients(t *testing.T) {
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("node or npm is not installed")
	}
	dir, err := filepath.Abs("testdata/node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "resend")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--no-save")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm install failed (no registry?): %v\n%s", err, out)
		}
	}

	cfg, _ := smtpsink.SelfSigned(t)
	tmp := t.TempDir()
	cert := cfg.Certificates[0]
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(tmp, "cert.pem"), filepath.Join(tmp, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	a := start(t, testapp.WithEnv("MAILROOM_SMTP_TLS_CERT", certFile), testapp.WithEnv("MAILROOM_SMTP_TLS_KEY", keyFile))
	_, port, _ := net.SplitHostPort(a.SubmissionAddr())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RESEND_BASE_URL="+a.URL+"/v1", "MAILROOM_KEY="+a.Key,
		"SUBMISSION_PORT="+port, "CA_FILE="+certFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node clients: %v\n%s", err, out)
	}
}
