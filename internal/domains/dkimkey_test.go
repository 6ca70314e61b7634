package domains_test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"mailroom/internal/domains"
)

func TestDKIMKeyRoundTrip(t *testing.T) {
	t.Parallel()
	key, err := domains.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if key.N.BitLen() != 2048 {
		t.Fatalf("key is %d bits", key.N.BitLen())
	}
	pemBytes := domains.MarshalPrivateKey(key)
	if !strings.HasPrefix(string(pemBytes), "-----BEGIN PRIVATE KEY-----") {
		t.Fatalf("not PKCS#8 PEM: %.40s", pemBytes)
	}
	got, err := domains.ParsePrivateKey(pemBytes)
	if err != nil || !got.Equal(key) {
		t.Fatalf("ParsePrivateKey: equal=%v err=%v", got != nil && got.Equal(key), err)
	}

	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if got, err := domains.ParsePrivateKey(pkcs1); err != nil || !got.Equal(key) {
		t.Fatalf("PKCS#1 not accepted: %v", err)
	}

	v := domains.DKIMRecordValue(&key.PublicKey)
	b64, ok := strings.CutPrefix(v, "v=DKIM1; k=rsa; p=")
	if !ok {
		t.Fatalf("record value %q", v)
	}
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil || !pub.(*rsa.PublicKey).Equal(&key.PublicKey) {
		t.Fatalf("p= does not carry the public key: %v", err)
	}
}

func TestParsePrivateKeyRejects(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty":      "",
		"not pem":    "hello",
		"wrong type": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"bad der":    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	} {
		if _, err := domains.ParsePrivateKey([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParsePrivateKey(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nMAA=\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = domains.ParsePrivateKey(data) // must not panic
	})
}
