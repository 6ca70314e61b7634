package secretbox_test

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"mailroom/internal/secretbox"
)

func newBox(t testing.TB, key string) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	b := newBox(t, "operator secret")
	for _, pt := range [][]byte{{}, []byte("whsec_abc"), bytes.Repeat([]byte{0xff}, 4096)} {
		s, err := b.Seal(pt)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s, "v1:") {
			t.Fatalf("sealed value %q lacks v1: prefix", s)
		}
		got, err := b.Open(s)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("Open = %q, %v; want %q", got, err, pt)
		}
	}
}

func TestSealUsesFreshNonce(t *testing.T) {
	t.Parallel()
	b := newBox(t, "k")
	s1, _ := b.Seal([]byte("same"))
	s2, _ := b.Seal([]byte("same"))
	if s1 == s2 {
		t.Fatal("two seals of the same plaintext are identical")
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	b := newBox(t, "right key")
	sealed, _ := b.Seal([]byte("private key bytes"))
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))

	flip := func(i int) string {
		c := bytes.Clone(raw)
		c[i] ^= 1
		return "v1:" + base64.RawURLEncoding.EncodeToString(c)
	}
	other, _ := newBox(t, "wrong key").Seal([]byte("private key bytes"))

	tests := map[string]string{
		"flipped nonce":      flip(0),
		"flipped ciphertext": flip(14),
		"flipped tag":        flip(len(raw) - 1),
		"truncated":          sealed[:len(sealed)-4],
		"other key":          other,
		"no prefix":          strings.TrimPrefix(sealed, "v1:"),
		"unknown version":    "v2:" + strings.TrimPrefix(sealed, "v1:"),
		"bad base64":         "v1:!!!",
		"empty":              "",
		"too short":          "v1:AAAA",
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := b.Open(s); !errors.Is(err, secretbox.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestMAC(t *testing.T) {
	t.Parallel()
	b := newBox(t, "k")
	m := b.MAC("unsubscribe", []byte("ct_1"))
	if len(m) != 32 {
		t.Fatalf("len = %d", len(m))
	}
	if !bytes.Equal(m, newBox(t, "k").MAC("unsubscribe", []byte("ct_1"))) {
		t.Fatal("MAC not deterministic for the same key")
	}
	if !b.Verify("unsubscribe", []byte("ct_1"), m) {
		t.Fatal("Verify rejected a good MAC")
	}
	for name, ok := range map[string]bool{
		"other purpose": b.Verify("cursor", []byte("ct_1"), m),
		"other data":    b.Verify("unsubscribe", []byte("ct_2"), m),
		"other key":     newBox(t, "k2").Verify("unsubscribe", []byte("ct_1"), m),
	} {
		if ok {
			t.Errorf("%s: MAC accepted", name)
		}
	}
}

func TestNewRejectsEmptyKey(t *testing.T) {
	t.Parallel()
	if _, err := secretbox.New(""); err == nil {
		t.Fatal("empty key accepted")
	}
}

// FuzzOpen feeds stored (possibly corrupted) values to Open: it must never
// panic, and must never accept anything it did not seal.
func FuzzOpen(f *testing.F) {
	b := newBox(f, "fuzz key")
	good, _ := b.Seal([]byte("seed"))
	for _, s := range []string{good, "", "v1:", "v1:AAAA", "v1:" + strings.Repeat("A", 40), "v2:xx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pt, err := b.Open(s)
		if err == nil && s != good && !bytes.Equal(pt, []byte("seed")) {
			t.Fatalf("Open accepted a forged value %q -> %q", s, pt)
		}
	})
}

func TestTokenOpensOnlyForItsPurposeAndBoundData(t *testing.T) {
	b, err := secretbox.New("token-test-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	tok := b.Token("cursor", []byte("/v1/emails"), []byte(`{"i":"em_1"}`))
	if p, ok := b.OpenToken("cursor", []byte("/v1/emails"), tok); !ok || string(p) != `{"i":"em_1"}` {
		t.Fatalf("own token: %q %v", p, ok)
	}
	other, _ := secretbox.New("another-key-0123456789abc")
	for name, open := range map[string]func() bool{
		"another purpose": func() bool { _, ok := b.OpenToken("unsubscribe", []byte("/v1/emails"), tok); return ok },
		"another bound":   func() bool { _, ok := b.OpenToken("cursor", []byte("/v1/domains"), tok); return ok },
		"another key":     func() bool { _, ok := other.OpenToken("cursor", []byte("/v1/emails"), tok); return ok },
		"tampered":        func() bool { _, ok := b.OpenToken("cursor", []byte("/v1/emails"), "x"+tok); return ok },
		"no dot":          func() bool { _, ok := b.OpenToken("cursor", nil, "abc"); return ok },
	} {
		if open() {
			t.Errorf("%s: token opened", name)
		}
	}
}

// TestMACAndTokenFormat pins MAC and Token to their definition, HMAC-SHA256
// under HKDF("mac v1 "+purpose) of the operator key, and the token's
// base64url(payload) "." base64url(first 16 bytes of the MAC), the form of
// every link already sent; with the keyed HMACs shared between goroutines.
func TestMACAndTokenFormat(t *testing.T) {
	t.Parallel()
	b := newBox(t, "operator key")
	prk, err := hkdf.Extract(sha256.New, []byte("operator key"), []byte("mailroom/secretbox"))
	if err != nil {
		t.Fatal(err)
	}
	want := func(purpose string, data []byte) []byte {
		k, err := hkdf.Expand(sha256.New, prk, "mac v1 "+purpose, sha256.Size)
		if err != nil {
			t.Fatal(err)
		}
		m := hmac.New(sha256.New, k)
		m.Write(data)
		return m.Sum(nil)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				purpose := []string{"unsubscribe", "tracking click", "cursor"}[(g+i)%3]
				bound := []byte(strings.Repeat("b", i%3))
				payload := []byte(fmt.Sprintf("payload %d %d", g, i))
				signed := append(append([]byte{}, bound...), payload...)
				if got := b.MAC(purpose, signed); !bytes.Equal(got, want(purpose, signed)) {
					errs <- fmt.Sprintf("MAC(%q, %q) = %x", purpose, signed, got)
					return
				}
				tok := b.Token(purpose, bound, payload)
				if w := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(want(purpose, signed)[:16]); tok != w {
					errs <- fmt.Sprintf("Token(%q, %q, %q) = %q, want %q", purpose, bound, payload, tok, w)
					return
				}
				if p, ok := b.OpenToken(purpose, bound, tok); !ok || !bytes.Equal(p, payload) {
					errs <- fmt.Sprintf("OpenToken of %q: %q %v", tok, p, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
