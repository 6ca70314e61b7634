package outbound

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/testkit/testkeys"
)

// testRSAKey is a key made ahead of time (testkeys): generating RSA-2048
// takes long enough to matter when several tests need a key.
func testRSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	return testkeys.Key(0)
}

// verifyDKIM checks raw's signatures against the given selector's key, the
// way a receiver would through DNS.
func verifyDKIM(t testing.TB, raw []byte, domain, selector string, pub crypto.PublicKey) {
	t.Helper()
	rec, err := DKIMPublicRecord(pub)
	if err != nil {
		t.Fatal(err)
	}
	want := selector + "._domainkey." + domain
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) {
			if name != want {
				return nil, fmt.Errorf("unexpected lookup %q", name)
			}
			return []string{rec}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d signatures", len(vs))
	}
	if vs[0].Err != nil {
		t.Fatalf("dkim verify: %v", vs[0].Err)
	}
	if vs[0].Domain != domain {
		t.Fatalf("d=%q", vs[0].Domain)
	}
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	keys := map[string]crypto.Signer{"rsa": testRSAKey(t), "ed25519": edKey}
	raw, err := Build(sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range keys {
		t.Run(name, func(t *testing.T) {
			signed, err := NewSigner("example.com", "mr1", key).Sign(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(signed, []byte("DKIM-Signature:")) || !bytes.HasSuffix(signed, raw) {
				t.Fatal("signature not prepended")
			}
			for _, want := range []string{"c=relaxed/relaxed", "a=", "h=From:From:Subject:Subject:Date:Date:To:To:Message-ID:Message-ID:Reply-To:Reply-To:Cc:Cc:MIME-Version:Content-Type:In-Reply-To;"} {
				if !bytes.Contains(bytes.ReplaceAll(signed, []byte("\r\n "), nil), []byte(want)) {
					t.Errorf("signature lacks %q", want)
				}
			}
			verifyDKIM(t, signed, "example.com", "mr1", key.Public())

			tampered := bytes.Replace(signed, []byte("Hello World"), []byte("Hello Wurld"), 1)
			vs, _ := dkim.VerifyWithOptions(bytes.NewReader(tampered), &dkim.VerifyOptions{
				LookupTXT: func(string) ([]string, error) { r, _ := DKIMPublicRecord(key.Public()); return []string{r}, nil },
			})
			if len(vs) != 1 || vs[0].Err == nil {
				t.Fatal("tampered body verified")
			}
		})
	}
}

func TestDKIMPublicRecord(t *testing.T) {
	t.Parallel()
	rec, err := DKIMPublicRecord(testRSAKey(t).Public())
	if err != nil || !bytes.HasPrefix([]byte(rec), []byte("v=DKIM1; k=rsa; p=MII")) {
		t.Fatalf("%q %v", rec, err)
	}
	if _, err := DKIMPublicRecord("nope"); err == nil {
		t.Fatal("accepted a string key")
	}
}

func BenchmarkSignRSA2048(b *testing.B) {
	raw, err := Build(sampleMessage())
	if err != nil {
		b.Fatal(err)
	}
	s := NewSigner("example.com", "mr1", testRSAKey(b))
	for b.Loop() {
		if _, err := s.Sign(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRelaxedBodyHash(b *testing.B) {
	m := sampleMessage()
	m.HTML = strings.Repeat(`<p style="margin:0 0 12px">Lorem ipsum dolor sit amet, <a href="https://example.com/x?y=1">consectetur</a> adipiscing elit, sed do eiusmod.</p>`+"\n", 120)
	m.Text, m.Attachments = "", nil
	raw, err := Build(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		relaxedBodyHash(raw)
	}
}

// FuzzSignMatchesGoMsgauth holds the signer to go-msgauth's: the same
// field, tag for tag, for any body (with the signing time fixed, RSA
// PKCS #1 v1.5 signatures are the same bytes), and its verifier passes it.
func FuzzSignMatchesGoMsgauth(f *testing.F) {
	for _, body := range []string{"", "\r\n", "a  b \t\r\n\r\n\r\n", "x\ny\r\n \r\n\tz", "lone\rcr\r\n", "trailing   ", strings.Repeat("ab \t", 3000) + "\r\n\r\n",
		strings.Repeat("x", 5000) + "  \r\n" + strings.Repeat("y", 4094) + "\r\n\r\n \r\n", strings.Repeat("z", 4095) + " \n" + strings.Repeat("w", 9000)} {
		f.Add(body)
	}
	key := testRSAKey(f)
	fixed := time.Unix(1_800_000_000, 0)
	dkimNow = func() time.Time { return fixed }
	f.Cleanup(func() { dkimNow = time.Now })
	f.Fuzz(func(t *testing.T, body string) {
		raw := []byte("From: A <a@example.com>\r\nTo: b@example.net\r\nSubject: s\r\n  folded  there\r\nList-Unsubscribe: <https://u.example.com/x>\r\nDate: Mon, 2 Jan 2006 15:04:05 +0000\r\n\r\n" + body)
		ours, err := NewSigner("example.com", "mr1", key).Sign(raw)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := dkim.NewSigner(&dkim.SignOptions{Domain: "example.com", Selector: "mr1", Signer: key, Hash: crypto.SHA256,
			HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed, HeaderKeys: headerKeys(raw)})
		if err != nil {
			t.Fatal(err)
		}
		ds.Write(raw)
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
		theirs := ds.Signature()
		tags := func(s string) map[string]string {
			s = strings.TrimPrefix(strings.NewReplacer("\r\n ", "", "\r\n", "").Replace(s), "DKIM-Signature:")
			m := map[string]string{}
			for _, kv := range strings.Split(s, ";") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					m[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			delete(m, "t")
			delete(m, "b")
			return m
		}
		if a, b := tags(string(ours[:len(ours)-len(raw)])), tags(theirs); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("ours %v\ntheirs %v", a, b)
		}
		verifyDKIM(t, ours, "example.com", "mr1", key.Public())
	})
}

// relaxedBodyHashByByte is the canonicalization written the plain way, byte
// by byte: FuzzRelaxedBodyHash holds the fast one to it.
func relaxedBodyHashByByte(body []byte) [32]byte {
	h := sha256.New()
	var buf [4096]byte
	out := buf[:0]
	var breaks []byte // line-break bytes held until text follows
	wsp, written, prevCR := false, false, false
	for _, ch := range body {
		cr := prevCR
		prevCR = false
		switch ch {
		case ' ', '\t':
			wsp = true
			continue
		case '\r':
			prevCR = true
			wsp = false
			breaks = append(breaks, ch)
			continue
		case '\n':
			wsp = false
			if !cr {
				breaks = append(breaks, '\r')
			}
			breaks = append(breaks, ch)
			continue
		}
		if len(out)+len(breaks)+2 > cap(out) {
			h.Write(out)
			out = buf[:0]
		}
		if len(breaks) > 0 {
			if len(breaks) > cap(out)-len(out)-2 {
				h.Write(out)
				h.Write(breaks)
				out = buf[:0]
			} else {
				out = append(out, breaks...)
			}
			breaks = breaks[:0]
		}
		if wsp {
			out = append(out, ' ')
			wsp = false
		}
		out = append(out, ch)
		written = true
	}
	h.Write(out)
	if written {
		h.Write([]byte("\r\n"))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

func FuzzRelaxedBodyHash(f *testing.F) {
	for _, s := range []string{"", "a  b \t\r\n\r\n", "x\ny\r\n \r\n\tz", "lone\rcr", "a b c d\r\n", " lead", "trail ", strings.Repeat("w ", 3000), strings.Repeat("x", 5000) + " \n",
		"12345678 2345678  345678\x01 ", "abcdefg h", "abcdefgh ", "abcdefgh  x", "\xc3\xa9t\xc3\xa9 caf\xc3\xa9s", strings.Repeat("Lorem ipsum dolor sit amet.\r\n", 400),
		// At the edges of canonicalEnd's fast path.
		"a\r\nb", "a\r\nb\r\n", "a\r\nb\r\n\r\n\r\n", "\r\n", "\r\n\r\n", "\r\n\r\nx", " \r\n", "a \r\n", "a\r\n ", "a\r\n b",
		"a\n", "a\r", "a\r\r\n", "a\n\r\n", "a\r\n\r", "a\r\n\n", "\n", "\r", "a\tb\r\n", "a b\r\n", " a\r\n", "x\r\n\r\n \r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if relaxedBodyHash(body) != relaxedBodyHashByByte(body) {
			t.Fatalf("the fast canonicalization differs for %q", body)
		}
	})
}

// TestAppendSignReusesBuffer holds AppendSign to Sign's bytes after what
// dst held, and to writing a large message into a reused buffer without
// allocating one of its size: bench/broadcast's messages cross 32 KB, where
// a new buffer per message is a large allocation.
func TestAppendSignReusesBuffer(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	fixed := time.Unix(1_800_000_000, 0)
	dkimNow = func() time.Time { return fixed }
	t.Cleanup(func() { dkimNow = time.Now })
	m := sampleMessage()
	m.HTML = strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n", 600)
	raw, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSigner("example.com", "mr1", key)
	want, err := s.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.AppendSign([]byte("kept"), raw)
	if err != nil || !bytes.Equal(got, append([]byte("kept"), want...)) {
		t.Fatalf("AppendSign after a prefix: %v, %d bytes, want %d", err, len(got), 4+len(want))
	}
	buf := make([]byte, 0, 2*len(want))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		if buf, err = s.AppendSign(buf[:0], raw); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > uint64(len(raw))/4 {
		t.Fatalf("AppendSign into a reused buffer allocated %d bytes per %d-byte message", per, len(raw))
	}
}

// TestCanonicalEnd holds the fast path to the bodies it is for (those we
// build) and away from the others; FuzzRelaxedBodyHash holds its hash.
func TestCanonicalEnd(t *testing.T) {
	line := "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\r\n"
	for _, c := range []struct {
		body string
		end  int
		ok   bool
	}{
		{"", 0, true},
		{"\r\n\r\n", 0, true},
		{line, len(line) - 2, true},
		{" " + line + "\r\n\r\n", len(line) - 1, true},
		{strings.Repeat(line, 9) + "x", 9*len(line) + 1, true},
		{"\r\n" + strings.Repeat(line, 3) + "\r\n", 2 + 3*len(line) - 2, true},
		{"Lorem  ipsum\r\n", 0, false},
		{"Lorem ipsu  \r\n", 0, false},
		{"Lorem ipsum dolo  sit\r\n", 0, false},
		{"Lorem ipsum \r\nx", 0, false},
		{"Lorem\tipsum dolor\r\n", 0, false},
		{"Lorem ipsum dolor\n", 0, false},
		{"Lorem ipsum dolor\rx\r\n", 0, false},
		{"\nLorem ipsum dolor\r\n", 0, false},
		{"Lorem ipsum dolor \r\n", 0, false},
		{"Lorem ipsum dolor sit\r\n\r\n ", 0, false},
	} {
		end, ok := canonicalEnd([]byte(c.body))
		if ok != c.ok || ok && end != c.end {
			t.Errorf("canonicalEnd(%q) = %d, %v; want %d, %v", c.body, end, ok, c.end, c.ok)
		}
	}
}

// FuzzHasDoubleSpace holds the word-at-a-time search to bytes.Contains.
func FuzzHasDoubleSpace(f *testing.F) {
	for _, s := range []string{"", " ", "  ", "a  b", "abcdefg  ", "abcdefgh  ", "abcdef  gh", "abcdefg hijklmn opq", strings.Repeat("ab ", 20) + " ", "       !"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := hasDoubleSpace(b), bytes.Contains(b, []byte("  ")); got != want {
			t.Fatalf("hasDoubleSpace(%q) = %v, want %v", b, got, want)
		}
	})
}

// FuzzKeyOf holds keyOf to matching name with each of signedKeys, and
// to there being at most one match.
func FuzzKeyOf(f *testing.F) {
	for _, s := range []string{"From", " from ", "REPLY-TO", "Feedbac\u212a-ID", "X-Other", "", "List-Unsubscribe-Post", "Cc\t", "c\u00e7"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, name []byte) {
		want := -1
		for i, k := range signedKeys {
			if nameIs(name, k) {
				if want >= 0 {
					t.Fatalf("%q is both %q and %q", name, signedKeys[want], k)
				}
				want = i
			}
		}
		if got := keyOf(name); got != want {
			t.Fatalf("keyOf(%q) = %d, want %d", name, got, want)
		}
	})
}
