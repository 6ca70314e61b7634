package outbound

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/libcrypto"
)

// overSigned are the fields a signature covers once more than the message
// has them (RFC 6376 section 8.15): a verifier then fails when anyone adds
// a second From, Subject, Date, To or Message-ID above the signed one,
// which is what a display-name or subject spoof needs, or a Reply-To or Cc
// the message did not have (a reply diverted or copied elsewhere).
var overSigned = []string{"From", "Subject", "Date", "To", "Message-ID", "Reply-To", "Cc"}

// signedWhenPresent are covered as often as they appear: the unsubscribe
// headers (RFC 8058 section 4 requires List-Unsubscribe and
// List-Unsubscribe-Post to be signed) and the other list fields (RFC 2369,
// RFC 2919), Gmail's Feedback-ID, the Sender and the MIME fields, so a
// relay cannot swap the body structure.
var signedWhenPresent = []string{
	"Sender", "List-Unsubscribe", "List-Unsubscribe-Post", "List-Id",
	"List-Help", "List-Subscribe", "List-Post", "List-Owner", "List-Archive",
	"Feedback-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding",
	"In-Reply-To", "References",
}

// headerKeys is the h= list for raw: every over-signed field one time more
// than present, every other listed field as many times as present.
func headerKeys(raw []byte) []string {
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

// Signer adds a DKIM-Signature for one domain and selector.
type Signer struct {
	domain, selector string
	key              crypto.Signer
}

// NewSigner returns a Signer; key must be an RSA or Ed25519 private key.
// An RSA key signs through libcrypto where it is loaded: the signature is
// most of a message's CPU, and libcrypto's costs a quarter of Go's.
func NewSigner(domain, selector string, key crypto.Signer) *Signer {
	if k, ok := key.(*rsa.PrivateKey); ok {
		key = libcrypto.Signer(k)
	}
	return &Signer{domain: domain, selector: selector, key: key}
}

// Sign returns raw with one DKIM-Signature header field prepended
// (relaxed/relaxed canonicalization, SHA-256), the field as go-msgauth
// writes it (tags sorted, b= folded last). The canonicalization is done
// here in one pass over raw: go-msgauth's copied the message through a
// pipe and canonicalized it byte by byte, about a fifth of the
// non-signing CPU of a 15 KB broadcast message (profiled); its verifier
// checks ours in the tests.
func (s *Signer) Sign(raw []byte) ([]byte, error) {
	algo := "rsa-sha256"
	opts := crypto.SignerOpts(crypto.SHA256)
	switch s.key.Public().(type) {
	case *rsa.PublicKey:
	case ed25519.PublicKey:
		algo, opts = "ed25519-sha256", crypto.Hash(0)
	default:
		return nil, fmt.Errorf("outbound: dkim: unsupported key type %T", s.key.Public())
	}
	fields, body := splitHeader(raw)
	bh := relaxedBodyHash(body)
	keys := headerKeys(raw)
	params := map[string]string{
		"v": "1", "a": algo, "c": "relaxed/relaxed", "d": s.domain, "s": s.selector,
		"t": strconv.FormatInt(dkimNow().Unix(), 10), "h": strings.Join(keys, ":"),
		"bh": base64.StdEncoding.EncodeToString(bh[:]), "b": "",
	}
	h := sha256.New()
	picked := map[string]int{}
	for _, k := range keys {
		if f := pickField(fields, picked, k); f != "" {
			io.WriteString(h, relaxedHeader(f))
		}
	}
	io.WriteString(h, strings.TrimRight(relaxedHeader(formatSignature(params)), "\r\n"))
	sig, err := s.key.Sign(rand.Reader, h.Sum(nil), opts)
	if err != nil {
		return nil, fmt.Errorf("outbound: dkim: %w", err)
	}
	params["b"] = base64.StdEncoding.EncodeToString(sig)
	field := formatSignature(params)
	out := bytes.NewBuffer(make([]byte, 0, len(field)+len(raw)))
	out.WriteString(field)
	out.Write(raw)
	return out.Bytes(), nil
}

// dkimNow is the signature's time (t=); tests may fix it.
var dkimNow = time.Now

// splitHeader returns the header fields of raw (each with its folded
// lines, as written) and the body after the blank line.
func splitHeader(raw []byte) (fields []string, body []byte) {
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

// pickField returns the next instance of the field named k from the
// bottom up (RFC 6376 section 5.4.2), "" when none is left.
func pickField(fields []string, picked map[string]int, k string) string {
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

// relaxedHeader is RFC 6376 section 3.4.2: the name lowercased, the value
// unfolded with runs of white space as one space, none at either end.
func relaxedHeader(f string) string {
	k, v, ok := strings.Cut(f, ":")
	if !ok {
		return strings.TrimSpace(strings.ToLower(f)) + ":\r\n"
	}
	v = strings.Join(strings.FieldsFunc(v, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}), " ")
	return strings.TrimSpace(strings.ToLower(k)) + ":" + v + "\r\n"
}

// relaxedBodyHash is the SHA-256 of the body canonicalized as RFC 6376
// section 3.4.4 (and go-msgauth) has it: a lone LF counts as CRLF, runs of
// spaces and tabs become one space and vanish before a line break, the
// breaks at the end go, and a body with any text ends with one CRLF.
func relaxedBodyHash(body []byte) [32]byte {
	h := sha256.New()
	var buf [4096]byte
	out := buf[:0]
	var breaks []byte // line-break bytes held until text follows
	wsp, written, prevCR := false, false, false
	for i := 0; i < len(body); {
		ch := body[i]
		cr := prevCR
		prevCR = false
		switch ch {
		case ' ', '\t':
			wsp = true
			i++
			continue
		case '\r':
			prevCR = true
			wsp = false
			breaks = append(breaks, ch)
			i++
			continue
		case '\n':
			wsp = false
			if !cr {
				breaks = append(breaks, '\r')
			}
			breaks = append(breaks, ch)
			i++
			continue
		}
		// A run of ordinary bytes, and of single spaces between them (which
		// canonicalization keeps), is copied whole: byte by byte, this loop
		// was most of a 15 KB body's canonicalization.
		j := i + 1
		for j < len(body) {
			if j+8 <= len(body) && plainBodyRun(binary.LittleEndian.Uint64(body[j:])) {
				j += 8
				continue
			}
			if c := body[j]; !bodySpecial[c] {
				j++
			} else if c == ' ' && j+1 < len(body) && !bodySpecial[body[j+1]] {
				j += 2
			} else {
				break
			}
		}
		if len(out)+len(breaks)+1+(j-i) > cap(out) {
			h.Write(out)
			out = buf[:0]
		}
		if len(breaks) > 0 {
			if len(breaks) > cap(out)-len(out)-1 {
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
		if j-i > cap(out)-len(out) {
			h.Write(out)
			out = buf[:0]
			h.Write(body[i:j])
		} else {
			out = append(out, body[i:j]...)
		}
		written = true
		i = j
	}
	h.Write(out)
	if written {
		h.Write([]byte("\r\n"))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// plainBodyRun reports whether the eight bytes in w (little-endian) all
// go on in a run: no control byte (CR, LF and tab among them), no space
// before another space and none last (the byte after it is not known).
// A body is mostly such runs, so they are copied eight bytes a step.
func plainBodyRun(w uint64) bool {
	const ones, highs, low7 = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	// An ASCII byte under 0x20 (adding 0x60 to its low seven bits leaves
	// its high bit clear; no carry crosses a byte).
	control := ^((w & low7) + 0x60*ones) & ^w & highs
	x := w ^ 0x20*ones // a space is now a zero byte
	spaces := ^((x & low7) + low7 | x) & highs
	return control|spaces&(spaces>>8)|spaces&(0x80<<56) == 0
}

// bodySpecial marks the bytes relaxed body canonicalization looks at.
var bodySpecial = [256]bool{' ': true, '\t': true, '\r': true, '\n': true}

// formatSignature writes the DKIM-Signature field as go-msgauth does: the
// tags but b= sorted, lines kept under 76 characters, b= folded last.
func formatSignature(params map[string]string) string {
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

// DKIMPublicRecord returns the TXT record value to publish at
// <selector>._domainkey.<domain> for pub: "v=DKIM1; k=rsa; p=<base64 DER>"
// (SubjectPublicKeyInfo for RSA, the raw 32 bytes for Ed25519 per RFC 8463).
func DKIMPublicRecord(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			return "", err
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der), nil
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(k), nil
	default:
		return "", fmt.Errorf("outbound: dkim: unsupported public key type %T", pub)
	}
}
