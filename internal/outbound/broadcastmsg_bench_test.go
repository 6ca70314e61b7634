package outbound

import (
	"crypto"
	"crypto/ed25519"
	"io"
	"strings"
	"testing"
	"time"
)

// broadcastMessage is bench/broadcast's message for member i: the 15 KB
// html of short lines with its merge values, the unsubscribe footer and
// open pixel of a tracked broadcast, the list headers; the text derived.
func broadcastMessage(i int) *Message {
	n := strings.Repeat("7", i%5+1)
	unsub := "https://mail.x.test/unsubscribe/eyJ3IjoiV1MwMDEiLCJ0IjoiIiwiZSI6Im0wMDAwMDAxQGV4YW1wbGUubmV0In0." + n + "abcdef0123456789"
	html := "<html><body><p>Hello Name" + n + ", news for City" + n + " (pro plan).</p>" +
		strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 180) +
		`<div class="mr-footer" style="margin-top:24px;font-size:12px;color:#666">You receive this because you subscribed. <a href="` + unsub + `">Unsubscribe</a> | <a href="https://mail.x.test/preferences/` + n + `">Email preferences</a></div>` +
		`<img src="https://mail.x.test/t/o/em_0123456789` + n + `.gif" width="1" height="1" alt="">` + "</body></html>"
	return &Message{From: Address{Name: "News", Address: "news@x.test"}, To: []Address{{Address: "m000000" + n + "@example.net"}},
		Subject: "News for Name" + n, HTML: html, MessageID: MessageIDFor("em_0123456789"+n, "x.test"),
		Headers:    map[string]string{"List-Unsubscribe": "<" + unsub + ">", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"},
		FeedbackID: "ws1:marketing:mail.x.test", Date: time.Unix(1790000000, 0)}
}

// BenchmarkBroadcastBuildSign is delivery's per-recipient build and sign
// of a broadcast message, in reused buffers, with a key that signs nothing
// (the RSA signature, in libcrypto, is a constant beside it).
func BenchmarkBroadcastBuildSign(b *testing.B) {
	s := NewSigner("x.test", "mr1", nullKey{})
	var bufs Buffers
	msgs := []*Message{broadcastMessage(0), broadcastMessage(1), broadcastMessage(2)}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		raw, err := AppendBuild(bufs.Get(), msgs[i%len(msgs)])
		if err != nil {
			b.Fatal(err)
		}
		signed, err := s.AppendSign(bufs.Get(), raw)
		if err != nil {
			b.Fatal(err)
		}
		bufs.Put(raw)
		bufs.Put(signed)
		i++
	}
}

// nullKey passes for an Ed25519 key and signs with zeros.
type nullKey struct{}

func (nullKey) Public() crypto.PublicKey {
	return ed25519.PublicKey(make([]byte, ed25519.PublicKeySize))
}

func (nullKey) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return make([]byte, ed25519.SignatureSize), nil
}

// BenchmarkBroadcastBodyHash is the relaxed body hash of a built
// broadcast message.
func BenchmarkBroadcastBodyHash(b *testing.B) {
	raw, err := Build(broadcastMessage(0))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		relaxedBodyHash(raw)
	}
}

// BenchmarkBroadcastCanonicalEnd is the check that lets the body hash
// skip canonicalization.
func BenchmarkBroadcastCanonicalEnd(b *testing.B) {
	raw, err := Build(broadcastMessage(0))
	if err != nil {
		b.Fatal(err)
	}
	_, body := splitHeader(raw, nil)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		canonicalEnd(body)
	}
}

// TestBroadcastMessageAllocations bounds the allocations of building and
// signing a broadcast message in reused buffers (119 before outbound
// wrote the header itself; the key's own aside).
func TestBroadcastMessageAllocations(t *testing.T) {
	s := NewSigner("x.test", "mr1", nullKey{})
	var bufs Buffers
	m := broadcastMessage(0)
	n := testing.AllocsPerRun(50, func() {
		raw, err := AppendBuild(bufs.Get(), m)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := s.AppendSign(bufs.Get(), raw)
		if err != nil {
			t.Fatal(err)
		}
		bufs.Put(raw)
		bufs.Put(signed)
	})
	if n > 30 {
		t.Errorf("%v allocations a message, want at most 30", n)
	}
}
