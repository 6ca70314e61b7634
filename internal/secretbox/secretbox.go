// Package secretbox encrypts secrets at rest (DKIM private keys, webhook
// signing secrets) and authenticates values Mailroom hands out and later takes
// back (signed links, pagination cursors), all from the operator's single
// MAILROOM_SECRET_KEY.
//
// Subkeys are derived with HKDF-SHA256 (RFC 5869, Go's crypto/hkdf) so that
// the encryption key and each MAC purpose use independent keys; sealing is
// AES-256-GCM with a random 96-bit nonce (NIST SP 800-38D).
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strings"
	"sync"
)

// prefix versions the sealed format so a later key or cipher change can
// still open old values.
const prefix = "v1:"

// salt separates Mailroom's derivations from any other use of the same
// operator string.
var salt = []byte("mailroom/secretbox")

// ErrInvalid reports a sealed value that is malformed, was tampered with, or
// was sealed under another key.
var ErrInvalid = errors.New("secretbox: value is malformed, tampered with, or sealed with another key")

// Box seals and opens secrets with keys derived from one operator secret.
// It is safe for concurrent use.
type Box struct {
	aead   cipher.AEAD
	master []byte   // HKDF pseudorandom key, the input for per-purpose MAC keys
	keys   sync.Map // purpose → its MAC key: deriving one per MAC was half a tracking token's check
	macs   sync.Map // purpose → *sync.Pool of HMACs keyed for it
}

// New derives the box's keys from the operator's secret key string.
func New(key string) (*Box, error) {
	if key == "" {
		return nil, errors.New("secretbox: MAILROOM_SECRET_KEY is empty")
	}
	prk, err := hkdf.Extract(sha256.New, []byte(key), salt)
	if err != nil {
		return nil, err
	}
	encKey, err := hkdf.Expand(sha256.New, prk, "aes-256-gcm v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, master: prk}, nil
}

// Seal encrypts plaintext and returns "v1:" followed by the unpadded
// URL-safe base64 of nonce||ciphertext||tag.
func (b *Box) Seal(plaintext []byte) (string, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := b.aead.Seal(nonce, nonce, plaintext, []byte(prefix))
	return prefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value made by Seal. Any change to the value, or a different
// key, yields ErrInvalid.
func (b *Box) Open(s string) ([]byte, error) {
	body, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return nil, ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return nil, ErrInvalid
	}
	n := b.aead.NonceSize()
	pt, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(prefix))
	if err != nil {
		return nil, ErrInvalid
	}
	if pt == nil {
		pt = []byte{}
	}
	return pt, nil
}

// MAC returns HMAC-SHA256 of data under a key derived for purpose, so a MAC
// made for one use (say "unsubscribe") is never valid for another ("cursor").
func (b *Box) MAC(purpose string, data []byte) []byte {
	return b.appendMAC(nil, purpose, data)
}

// appendMAC appends MAC(purpose, data) to dst. Its HMAC comes keyed from a
// pool (Reset restores the keyed state): a new one per MAC hashed the key's
// two pads and allocated two digests, for every link of every message.
func (b *Box) appendMAC(dst []byte, purpose string, data []byte) []byte {
	p, ok := b.macs.Load(purpose)
	if !ok {
		key := b.macKey(purpose)
		p, _ = b.macs.LoadOrStore(purpose, &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }})
	}
	pool := p.(*sync.Pool)
	m := pool.Get().(hash.Hash)
	m.Reset()
	m.Write(data)
	dst = m.Sum(dst)
	pool.Put(m)
	return dst
}

func (b *Box) macKey(purpose string) []byte {
	if k, ok := b.keys.Load(purpose); ok {
		return k.([]byte)
	}
	key, err := hkdf.Expand(sha256.New, b.master, "mac v1 "+purpose, sha256.Size)
	if err != nil {
		// Expand fails only when asked for more than 255*32 bytes.
		panic("secretbox: " + err.Error())
	}
	b.keys.Store(purpose, key)
	return key
}

// Verify reports, in constant time, whether mac is MAC(purpose, data).
func (b *Box) Verify(purpose string, data, mac []byte) bool {
	return hmac.Equal(b.MAC(purpose, data), mac)
}

// tokenMAC is how many bytes of the MAC a token carries: 128 bits, beyond
// guessing, and short enough for a link in mail.
const tokenMAC = 16

// Token signs payload for purpose into base64url(payload) "." base64url(MAC):
// the stateless form of cursors and of links in mail. bound is signed too
// but not carried (a cursor's list path), so a token opens only where the
// same bound data is given again.
func (b *Box) Token(purpose string, bound, payload []byte) string {
	var scratch [sha256.Size]byte
	signed := payload
	if len(bound) > 0 {
		signed = append(bound[:len(bound):len(bound)], payload...)
	}
	mac := b.appendMAC(scratch[:0], purpose, signed)
	enc := base64.RawURLEncoding
	out := make([]byte, 0, enc.EncodedLen(len(payload))+1+enc.EncodedLen(tokenMAC))
	out = enc.AppendEncode(out, payload)
	out = append(out, '.')
	out = enc.AppendEncode(out, mac[:tokenMAC])
	return string(out)
}

// OpenToken returns the payload of a token that Token made for purpose and
// bound, or false for anything else (tampered, foreign, malformed).
func (b *Box) OpenToken(purpose string, bound []byte, token string) ([]byte, bool) {
	p64, m64, ok := strings.Cut(token, ".")
	if !ok {
		return nil, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || len(mac) != tokenMAC {
		return nil, false
	}
	want := b.MAC(purpose, append(bound[:len(bound):len(bound)], payload...))
	if !hmac.Equal(want[:tokenMAC], mac) {
		return nil, false
	}
	return payload, true
}
