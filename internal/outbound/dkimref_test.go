package outbound

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// signHeaders are header blocks that exercise the signer's reading of
// fields: folded, repeated, in any case, with odd spacing, without a
// colon, with a continuation before any field.
var signHeaders = []string{
	"From: A <a@example.com>\r\nTo: b@example.net\r\nSubject: s\r\n  folded  there\r\nDate: Mon, 2 Jan 2006 15:04:05 +0000\r\n\r\n",
	"FROM : a@x\r\nfrom: b@x\r\nsubject:\t tabbed \t value \r\nList-Unsubscribe: <https://u/x>\r\nlist-unsubscribe-post: List-Unsubscribe=One-Click\r\n\r\n",
	" leading continuation\r\n\tmore\r\nFrom: a@x\r\nNoColon\r\nFrom\r\nReply-To: r@x\r\nCC: c@x\r\nMessage-ID: <m@x>\r\n\r\n",
	"From: a@x\nTo: lf@only\n\tfolded\nFeedback-ID: a:b:c\nMIME-Version: 1.0\nContent-Type: text/plain\nContent-Transfer-Encoding: 7bit\n\nbody",
	"From: a@x\r\nIn-Reply-To: <i@x>\r\nReferences: <r@x>\r\n <r2@x>\r\nSender: s@x\r\nList-Id: l\r\nList-Help: h\r\nList-Subscribe: s\r\nList-Post: p\r\nList-Owner: o\r\nList-Archive: a\r\n\r\n",
	"From: a@x\r\nX-Long: " + strings.Repeat("word ", 60) + "\r\n\r\n",
	"Fr\u00f6m: a@x\r\nFeedbac\u212a-ID: kelvin\r\nSUBJECT: up\r\n\r\n",
	"From: a@x\r\nSubject: s\r\n\r\r\nnot a header: x\r\n",
	"From: a@x\r\nTo: t@x",
	"",
}

// TestSignMatchesReference holds Sign to the signer as it was before its
// header side read fields in place (referenceSign): with the time fixed
// and an Ed25519 key, whose signatures are deterministic, the same bytes.
func TestSignMatchesReference(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	fixed := time.Unix(1_800_000_000, 0)
	dkimNow = func() time.Time { return fixed }
	t.Cleanup(func() { dkimNow = time.Now })
	for _, domain := range []string{"example.com", "a-very-long-subdomain-name.of-a-long-registered-domain.example.com"} {
		s := NewSigner(domain, "mr1", key)
		for _, hdr := range signHeaders {
			for _, body := range []string{"", "body  text \r\n\r\n", strings.Repeat("Lorem ipsum.\r\n", 50)} {
				raw := []byte(hdr + body)
				got, err := s.Sign(raw)
				if err != nil {
					t.Fatal(err)
				}
				want, err := s.referenceSign(raw)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("Sign(%q):\n got %q\nwant %q", raw, got, want)
				}
				if k, rk := headerKeys(raw), referenceHeaderKeys(raw); !slices.Equal(k, rk) {
					t.Fatalf("headerKeys(%q) = %v, want %v", raw, k, rk)
				}
			}
		}
	}
}

// FuzzSignMatchesReference: TestSignMatchesReference over any message.
func FuzzSignMatchesReference(f *testing.F) {
	for _, h := range signHeaders {
		f.Add([]byte(h + "body\r\n"))
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	fixed := time.Unix(1_800_000_000, 0)
	dkimNow = func() time.Time { return fixed }
	f.Cleanup(func() { dkimNow = time.Now })
	s := NewSigner("example.com", "mr1", key)
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := s.Sign(raw)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.referenceSign(raw)
		if !bytes.Equal(got, want) {
			t.Fatalf("Sign(%q):\n got %q\nwant %q", raw, got, want)
		}
	})
}

func referenceHeaderKeys(raw []byte) []string {
	counts := map[string]int{}
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break // end of the header
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, _, ok := bytes.Cut(line, []byte(":")); ok {
			counts[strings.ToLower(string(bytes.TrimSpace(k)))]++
		}
	}
	var keys []string
	for _, k := range overSigned {
		for range counts[strings.ToLower(k)] + 1 {
			keys = append(keys, k)
		}
	}
	for _, k := range signedWhenPresent {
		for range counts[strings.ToLower(k)] {
			keys = append(keys, k)
		}
	}
	return keys
}

func (s *Signer) referenceSign(raw []byte) ([]byte, error) {
	algo := "rsa-sha256"
	opts := crypto.SignerOpts(crypto.SHA256)
	switch s.key.Public().(type) {
	case *rsa.PublicKey:
	case ed25519.PublicKey:
		algo, opts = "ed25519-sha256", crypto.Hash(0)
	default:
		return nil, fmt.Errorf("outbound: dkim: unsupported key type %T", s.key.Public())
	}
	fields, body := referenceSplitHeader(raw)
	bh := relaxedBodyHash(body)
	keys := referenceHeaderKeys(raw)
	params := map[string]string{
		"v": "1", "a": algo, "c": "relaxed/relaxed", "d": s.domain, "s": s.selector,
		"t": strconv.FormatInt(dkimNow().Unix(), 10), "h": strings.Join(keys, ":"),
		"bh": base64.StdEncoding.EncodeToString(bh[:]), "b": "",
	}
	h := sha256.New()
	picked := map[string]int{}
	for _, k := range keys {
		if f := referencePickField(fields, picked, k); f != "" {
			io.WriteString(h, referenceRelaxedHeader(f))
		}
	}
	io.WriteString(h, strings.TrimRight(referenceRelaxedHeader(referenceFormatSignature(params)), "\r\n"))
	sig, err := s.key.Sign(rand.Reader, h.Sum(nil), opts)
	if err != nil {
		return nil, fmt.Errorf("outbound: dkim: %w", err)
	}
	params["b"] = base64.StdEncoding.EncodeToString(sig)
	field := referenceFormatSignature(params)
	out := bytes.NewBuffer(make([]byte, 0, len(field)+len(raw)))
	out.WriteString(field)
	out.Write(raw)
	return out.Bytes(), nil
}

func referenceSplitHeader(raw []byte) (fields []string, body []byte) {
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		line := raw
		if i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return fields, raw
		}
		if (line[0] == ' ' || line[0] == '\t') && len(fields) > 0 {
			fields[len(fields)-1] += string(line)
			continue
		}
		fields = append(fields, string(line))
	}
	return fields, nil
}

func referencePickField(fields []string, picked map[string]int, k string) string {
	k = strings.ToLower(k)
	seen := 0
	for i := len(fields) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(fields[i], ":")
		if strings.ToLower(strings.TrimSpace(name)) != k {
			continue
		}
		if seen == picked[k] {
			picked[k]++
			return fields[i]
		}
		seen++
	}
	return ""
}

func referenceRelaxedHeader(f string) string {
	k, v, ok := strings.Cut(f, ":")
	if !ok {
		return strings.TrimSpace(strings.ToLower(f)) + ":\r\n"
	}
	v = strings.Join(strings.FieldsFunc(v, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}), " ")
	return strings.TrimSpace(strings.ToLower(k)) + ":" + v + "\r\n"
}

func referenceFormatSignature(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		if k != "b" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var sb strings.Builder
	sb.WriteString("DKIM-Signature:")
	line := ""
	for _, k := range keys {
		v := params[k]
		if 3+len(line)+len(v)+len(k) > 75 {
			sb.WriteString(line + "\r\n")
			line = ""
		}
		line += " " + k + "=" + v + ";"
	}
	sb.WriteString(line)
	sb.WriteString("\r\n")
	b := " b=" + params["b"]
	for len(b) > 75 {
		sb.WriteString(b[:75] + "\r\n ")
		b = b[75:]
	}
	sb.WriteString(b + "\r\n")
	return sb.String()
}
