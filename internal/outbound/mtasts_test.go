package outbound

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/netpolicy"
	"mailroom/internal/testkit/smtpsink"
)

// certFor makes a self-signed certificate for names and a pool trusting it.
func certFor(t *testing.T, names ...string) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, DNSNames: names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}, MinVersion: tls.VersionTLS12}, pool
}

// stsWorld is a loopback DNS (TXT, MX, A) and a policy server.
type stsWorld struct {
	loopResolver
	mu      sync.Mutex
	txt     map[string][]string
	policy  map[string]string // domain -> policy file
	fetches atomic.Int32
	port    int
}

func (w *stsWorld) LookupTXT(_ context.Context, name string) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.txt[name]; ok {
		return v, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func newSTSWorld(t *testing.T, pool *x509.CertPool, srvTLS *tls.Config) *stsWorld {
	w := &stsWorld{txt: map[string][]string{}, policy: map[string]string{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.fetches.Add(1)
		host, _, _ := net.SplitHostPort(r.Host)
		if host == "" {
			host = r.Host
		}
		w.mu.Lock()
		p, ok := w.policy[host[len("mta-sts."):]]
		w.mu.Unlock()
		if r.URL.Path != "/.well-known/mta-sts.txt" || !ok {
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "text/plain")
		_, _ = rw.Write([]byte(p))
	}))
	srv.TLS = srvTLS
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	w.port, _ = strconv.Atoi(port)
	return w
}

func (w *stsWorld) publish(domain, id, policy string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.txt["_mta-sts."+domain] = []string{"v=STSv1; id=" + id + ";"}
	w.policy[domain] = policy
}

// TestMTASTS: an enforce policy delivers only over TLS verified for a
// listed MX; a server without STARTTLS or with a certificate for another
// name gets nothing (a temporary failure), testing mode delivers anyway;
// every session's outcome is reported; the policy is cached while its id
// holds.
func TestMTASTS(t *testing.T) {
	t.Parallel()
	// One certificate for the policy hosts and the good MX hosts.
	srvTLS, roots := certFor(t, "mta-sts.good.test", "mx.good.test", "mta-sts.plain.test", "mta-sts.wrong.test", "mta-sts.testing.test", "mta-sts.nomatch.test")
	wrongTLS, wrongRoots := certFor(t, "elsewhere.test")
	roots.AddCert(wrongTLS.Certificates[0].Leaf)
	_ = wrongRoots

	good := smtpsink.Start(t, smtpsink.WithTLS(srvTLS))
	plain := smtpsink.Start(t)
	wrong := smtpsink.Start(t, smtpsink.WithTLS(wrongTLS))

	w := newSTSWorld(t, roots, srvTLS)
	pol := "version: STSv1\nmode: enforce\nmx: mx.good.test\nmx: *.plain.test\nmx: mx.wrong.test\nmx: mx.testing.test\nmax_age: 86400\n"
	for _, d := range []string{"good.test", "plain.test", "wrong.test", "nomatch.test"} {
		w.publish(d, "1", pol)
	}
	w.publish("testing.test", "1", "version: STSv1\nmode: testing\nmx: mx.testing.test\nmax_age: 86400\n")

	var mu sync.Mutex
	var results []TLSResult
	send := func(sink *smtpsink.Sink, rcpt string) (*Result, error) {
		tr := NewMX(w, MXOptions{Port: sink.Port(), HeloName: "out.test", STSResolver: w, RootCAs: roots, STSPort: w.port,
			OnTLSResult: func(r TLSResult) { mu.Lock(); results = append(results, r); mu.Unlock() }})
		defer tr.Close()
		return tr.Send(context.Background(), Envelope{From: "b@example.com", To: []string{rcpt}}, []byte("Subject: x\r\n\r\nbody\r\n"))
	}
	last := func() TLSResult {
		mu.Lock()
		defer mu.Unlock()
		if len(results) == 0 {
			return TLSResult{}
		}
		return results[len(results)-1]
	}

	if res, err := send(good, "a@good.test"); err != nil || !res.Rcpts[0].OK {
		t.Fatalf("enforce, good certificate: %v %+v", err, res)
	}
	if m := good.WaitFor(1, 5*time.Second); len(m) != 1 || !m[0].TLS {
		t.Fatalf("good sink got %+v", m)
	}
	if r := last(); r.Result != TLSSuccess || r.PolicyDomain != "good.test" || r.MXHost != "mx.good.test" {
		t.Errorf("report %+v", r)
	}

	res, err := send(plain, "a@plain.test")
	if err == nil || !IsTemporary(err) || res.Rcpts[0].OK || plain.Count() != 0 {
		t.Fatalf("enforce, no STARTTLS: %v %+v (sink has %d)", err, res, plain.Count())
	}
	if r := last(); r.Result != TLSStartTLSNotSupported {
		t.Errorf("report %+v", r)
	}

	res, err = send(wrong, "a@wrong.test")
	if err == nil || !IsTemporary(err) || wrong.Count() != 0 {
		t.Fatalf("enforce, certificate for another name: %v %+v", err, res)
	}
	if r := last(); r.Result != TLSCertHostMismatch {
		t.Errorf("report %+v", r)
	}

	w.mu.Lock()
	w.txt["_mta-sts.nomatch.test"] = []string{"v=STSv1; id=1;"}
	w.mu.Unlock()
	// nomatch.test's MX (mx.nomatch.test) is not in its policy.
	if _, err := send(good, "a@nomatch.test"); err == nil || !IsTemporary(err) {
		t.Fatalf("enforce, MX not listed: %v", err)
	}

	testingSink := smtpsink.Start(t, smtpsink.WithTLS(wrongTLS))
	if res, err := send(testingSink, "a@testing.test"); err != nil || !res.Rcpts[0].OK {
		t.Fatalf("testing mode: %v %+v", err, res)
	}
	mu.Lock()
	var sawTesting bool
	for _, r := range results {
		if r.PolicyDomain == "testing.test" && r.Result == TLSCertHostMismatch {
			sawTesting = true
		}
	}
	mu.Unlock()
	if !sawTesting {
		t.Error("testing-mode failure not reported")
	}

	// Cache: one transport, two sends, one fetch; a new id fetches again.
	tr := NewMX(w, MXOptions{Port: good.Port(), STSResolver: w, RootCAs: roots, STSPort: w.port})
	defer tr.Close()
	before := w.fetches.Load()
	for range 2 {
		if _, err := tr.Send(context.Background(), Envelope{From: "b@example.com", To: []string{"c@good.test"}}, []byte("Subject: x\r\n\r\nbody\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.fetches.Load() - before; n != 1 {
		t.Errorf("%d policy fetches for two sends", n)
	}
	w.publish("good.test", "2", pol)
	if _, err := tr.Send(context.Background(), Envelope{From: "b@example.com", To: []string{"c@good.test"}}, []byte("Subject: x\r\n\r\nbody\r\n")); err != nil {
		t.Fatal(err)
	}
	if n := w.fetches.Load() - before; n != 2 {
		t.Errorf("%d policy fetches after the id changed", n)
	}
}

func TestParseSTSPolicy(t *testing.T) {
	p, err := ParseSTSPolicy("version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmax_age: 604800\r\n")
	if err != nil || p.Mode != STSEnforce || len(p.MX) != 2 || p.MaxAge != 7*24*time.Hour {
		t.Fatalf("%+v %v", p, err)
	}
	if !p.Matches("MAIL.example.com.") || !p.Matches("mx1.example.net") || p.Matches("a.b.example.net") || p.Matches("example.net") {
		t.Error("matching")
	}
	for _, bad := range []string{"", "version: STSv2\nmode: enforce\nmx: a\nmax_age: 1", "version: STSv1\nmode: enforce\nmax_age: 1",
		"version: STSv1\nmode: strict\nmx: a\nmax_age: 1", "version: STSv1\nmode: enforce\nmx: a\nmax_age: 99999999999"} {
		if _, err := ParseSTSPolicy(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseSTSPolicy(f *testing.F) {
	f.Add("version: STSv1\nmode: enforce\nmx: mail.example.com\nmax_age: 86400\n")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseSTSPolicy(s)
		if err == nil && (p.MaxAge <= 0 || (p.Mode != STSNone && len(p.MX) == 0)) {
			t.Fatalf("accepted an unusable policy %+v", p)
		}
		if err == nil {
			p.Matches("mx.example.com")
		}
	})
}

// TestMTASTSObeysAddressPolicy: a policy host that resolves to loopback is
// not fetched under the outbound address policy; the fetch error says why.
func TestMTASTSObeysAddressPolicy(t *testing.T) {
	t.Parallel()
	srvTLS, roots := certFor(t, "mta-sts.good.test")
	w := newSTSWorld(t, roots, srvTLS)
	w.publish("good.test", "1", "version: STSv1\nmode: enforce\nmx: mx.good.test\nmax_age: 86400\n")
	tr := NewMX(w, MXOptions{STSResolver: w, RootCAs: roots, STSPort: w.port, Policy: netpolicy.New(false)})
	defer tr.Close()
	_, err := tr.sts.policy(context.Background(), "good.test")
	if err == nil || !strings.Contains(err.Error(), "address not allowed by the outbound policy") || w.fetches.Load() != 0 {
		t.Fatalf("fetch: %v, %d fetches reached the server", err, w.fetches.Load())
	}
	// With private addresses allowed (test sinks) the same fetch works.
	open := NewMX(w, MXOptions{STSResolver: w, RootCAs: roots, STSPort: w.port, Policy: netpolicy.New(true)})
	defer open.Close()
	if p, err := open.sts.policy(context.Background(), "good.test"); err != nil || p == nil {
		t.Fatalf("allowed: %v %v", p, err)
	}
}
