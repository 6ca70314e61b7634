package libcrypto

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"mailroom/internal/testkit/testkeys"
)

// TestLoadsWhereThereIsOne: a cgo build on a machine with OpenSSL 3's
// libcrypto (this one, CI's) must use it; else the speed-up would be lost
// without a word.
func TestLoadsWhereThereIsOne(t *testing.T) {
	version, ok := Loaded()
	t.Logf("libcrypto loaded: %v %s", ok, version)
	if !withCgo {
		if ok || WhyNot() != "built without cgo" {
			t.Fatalf("without cgo: loaded %v, why not %q", ok, WhyNot())
		}
		return
	}
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "/usr/lib/aarch64-linux-gnu/libcrypto.so.3", "/usr/lib64/libcrypto.so.3"} {
		if _, err := os.Stat(p); err == nil && !ok {
			t.Fatalf("%s is there, but libcrypto did not load", p)
		}
	}
}

// TestSameSignatures holds the libcrypto signer to crypto/rsa, byte for
// byte, over several keys and digests, signing from several goroutines at
// once.
func TestSameSignatures(t *testing.T) {
	if _, ok := Loaded(); !ok {
		t.Skip("no libcrypto in this build or on this machine (TestLoadsWhereThereIsOne says which)")
	}
	for k := range 3 {
		key := testkeys.Key(k)
		s := Signer(key)
		if s == crypto.Signer(key) {
			t.Fatalf("key %d: Signer answered the Go key, not the libcrypto signer", k)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 25 {
					d := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d", k, g, i))
					got, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
					if err != nil {
						t.Error(err)
						return
					}
					want, _ := rsa.SignPKCS1v15(nil, key, crypto.SHA256, d[:])
					if !slices.Equal(got, want) {
						t.Errorf("key %d digest %d/%d: signatures differ", k, g, i)
					}
				}
			})
		}
		wg.Wait()
	}
}

// TestOtherSchemesGoToGo: a PSS or SHA-1 request is crypto/rsa's, and
// still verifies.
func TestOtherSchemesGoToGo(t *testing.T) {
	key := testkeys.Key(0)
	s := Signer(key)
	d1 := sha1.Sum([]byte("x"))
	sig, err := s.Sign(rand.Reader, d1[:], crypto.SHA1)
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA1, d1[:], sig); err != nil {
		t.Fatal("SHA-1:", err)
	}
	d := sha256.Sum256([]byte("x"))
	sig, err = s.Sign(rand.Reader, d[:], &rsa.PSSOptions{Hash: crypto.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPSS(&key.PublicKey, crypto.SHA256, d[:], sig, nil); err != nil {
		t.Fatal("PSS:", err)
	}
	if pub, ok := s.Public().(*rsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		t.Fatalf("Public() = %v", s.Public())
	}
}

// TestOffMeansGo: with Use(false) keys are signed by crypto/rsa itself.
func TestOffMeansGo(t *testing.T) {
	Use(false)
	defer Use(true)
	if _, ok := Loaded(); ok {
		t.Fatal("Loaded after Use(false)")
	}
	key := testkeys.Key(1)
	if s := Signer(key); s != crypto.Signer(key) {
		t.Fatalf("Signer answered %T with libcrypto off", s)
	}
}

// FuzzSameSignature: any digest signs the same as with crypto/rsa.
func FuzzSameSignature(f *testing.F) {
	f.Add([]byte("hello"))
	key := testkeys.Key(2)
	s := Signer(key)
	f.Fuzz(func(t *testing.T, msg []byte) {
		d := sha256.Sum256(msg)
		got, err := s.Sign(nil, d[:], crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := rsa.SignPKCS1v15(nil, key, crypto.SHA256, d[:])
		if !slices.Equal(got, want) {
			t.Fatal("signatures differ")
		}
	})
}

func BenchmarkSign(b *testing.B) {
	key := testkeys.Key(0)
	d := sha256.Sum256([]byte("x"))
	for _, c := range []struct {
		name string
		s    crypto.Signer
	}{{"crypto-rsa", key}, {"libcrypto", Signer(key)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.s.Sign(rand.Reader, d[:], crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
