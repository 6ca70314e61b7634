package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/ids"
)

// SignatureTolerance is the age the spec advises receivers to accept.
const SignatureTolerance = 300 * time.Second

// Reasons Verify refuses a header.
var (
	ErrSignatureMalformed = errors.New("webhooks: signature header malformed")
	ErrSignatureExpired   = errors.New("webhooks: signature timestamp outside tolerance")
	ErrSignatureMismatch  = errors.New("webhooks: no v1 signature matches")
)

// NewSecret mints an endpoint signing secret: "whsec_" followed by 256
// random bits. The whole string, prefix included, is the HMAC key.
func NewSecret() string { return "whsec_" + ids.Secret(32) }

// Sign returns the x-svc-signature value for body sent at t:
// "t=<unix>,v1=<hex>" with one v1 per secret, so that during a rotation
// receivers holding either the old or the new secret can verify.
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a header as a receiver should: the timestamp within
// tolerance of now (either side; tolerance <= 0 skips the check), and any v1
// equal, in constant time, to the HMAC of "<t>.<body>" under secret. body
// must be the raw bytes received, before any JSON parsing. Unknown schemes
// (v0, v2...) are ignored so that a future scheme does not break receivers.
func Verify(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureMalformed
		}
		switch k {
		case "t":
			if ts != "" || v == "" || len(v) > 18 || strings.Trim(v, "0123456789") != "" {
				return ErrSignatureMalformed
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return ErrSignatureMalformed
			}
			sigs = append(sigs, sig)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return ErrSignatureMalformed
	}
	sec, _ := strconv.ParseInt(ts, 10, 64) // digits only and at most 18 of them: cannot fail
	if tolerance > 0 {
		age := now.Sub(time.Unix(sec, 0))
		if age > tolerance || age < -tolerance {
			return ErrSignatureExpired
		}
	}
	want := mac(secret, ts, body)
	match := false
	for _, sig := range sigs {
		// Check every candidate so timing does not reveal which one matched.
		if hmac.Equal(sig, want) {
			match = true
		}
	}
	if !match {
		return ErrSignatureMismatch
	}
	return nil
}

// SignSvix returns the Svix-style signature of body sent as msgID at t:
// "v1,<base64 HMAC-SHA256 of "<msgID>.<unix>.<body>">" for each secret,
// separated by spaces. The HMAC key is the base64-decoded secret after its
// whsec_ prefix, as Svix's verifiers read it (ours decodes: its 52 base32
// characters are in base64's alphabet).
func SignSvix(msgID string, t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			key = []byte(s)
		}
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msgID + "." + ts + "."))
		h.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(h.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// svixHeaders are the Svix-style headers of one delivery, in both
// spellings (webhook-* of Standard Webhooks, svix-* of Svix's own
// libraries). Every delivery carries them beside the spec's x-svc-*, so
// the Resend SDKs' verify takes any delivery (issue 41).
func svixHeaders(msgID string, t time.Time, body []byte, secrets []string) map[string]string {
	ts, sig := strconv.FormatInt(t.Unix(), 10), SignSvix(msgID, t, body, secrets...)
	return map[string]string{
		"Webhook-Id": msgID, "Webhook-Timestamp": ts, "Webhook-Signature": sig,
		"Svix-Id": msgID, "Svix-Timestamp": ts, "Svix-Signature": sig,
	}
}
