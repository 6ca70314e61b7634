package sending

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// decodePlain decodes the common send request in one pass: a JSON object
// whose fields are known and hold strings, arrays of strings or objects of
// strings, or null. It answers false for anything else (an attachment, a
// template, a number, an unknown field, a malformed body), and decodeRequest, which defines every
// answer, decodes the request instead. Where both decode a body they agree
// exactly (FuzzDecodePlainAgrees). Decoding was a fifth of the server's
// CPU per send: the general path unmarshals the body into a map, then each
// field again, validating the bytes every time.
func decodePlain(raw []byte) (*Request, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	body := gjson.ParseBytes(raw)
	if !body.IsObject() {
		return nil, false
	}
	r := &Request{}
	ok := true
	body.ForEach(func(k, v gjson.Result) bool {
		name, plain := plainString(k)
		if !plain {
			ok = false
			return false
		}
		switch name {
		case "from":
			ok = setString(&r.From, v)
		case "subject":
			ok = setString(&r.Subject, v)
		case "html":
			ok = setString(&r.HTML, v)
		case "text":
			ok = setString(&r.Text, v)
		case "send_at":
			ok = setString(&r.SendAt, v)
		case "idempotency_key":
			ok = setString(&r.IdempotencyKey, v)
		case "topic":
			ok = setString(&r.Topic, v)
		case "to":
			r.To, ok = plainList(v)
		case "cc":
			r.Cc, ok = plainList(v)
		case "bcc":
			r.Bcc, ok = plainList(v)
		case "reply_to":
			r.ReplyTo, ok = plainList(v)
		case "headers":
			r.Headers, ok = plainMap(v)
		case "tags":
			r.Tags, ok = plainMap(v)
		case "track_opens":
			ok = setBool(&r.TrackOpens, v)
		case "track_clicks":
			ok = setBool(&r.TrackClicks, v)
		case "dry_run":
			ok = setBool(&r.DryRun, v)
		default: // attachments, template, unknown fields
			ok = false
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return r, true
}

// plainString is a JSON string's value, exactly as encoding/json decodes
// it: taken as written when it has no escape and is valid UTF-8, else
// decoded by encoding/json itself (Go's encoder writes < > & as \u003c and
// so on, so escapes are common).
func plainString(v gjson.Result) (string, bool) {
	if v.Type != gjson.String || len(v.Raw) < 2 {
		return "", false
	}
	s := v.Raw[1 : len(v.Raw)-1]
	if strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s) {
		return s, true
	}
	if u, ok := unescape(s); ok {
		return u, true
	}
	err := json.Unmarshal([]byte(v.Raw), &s)
	return s, err == nil
}

// unescape decodes the escapes of a JSON string's body (between its
// quotes) as encoding/json does, for valid UTF-8 text whose escapes are the
// one-letter ones or \u of a rune that is not a surrogate: Go's encoder
// writes < > & as \u003c and so on, so most HTML bodies have some. It answers
// false for anything else (a surrogate pair, invalid UTF-8), which
// encoding/json decodes instead.
func unescape(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			j := strings.IndexByte(s[i:], '\\')
			if j < 0 {
				j = len(s) - i
			}
			seg := s[i : i+j]
			if !utf8.ValidString(seg) {
				return "", false
			}
			b = append(b, seg...)
			i += j
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			b = append(b, c)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if i+6 > len(s) {
				return "", false
			}
			var r rune
			for _, h := range []byte(s[i+2 : i+6]) {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if utf16.IsSurrogate(r) {
				return "", false
			}
			b = utf8.AppendRune(b, r)
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(b), true
}

func setString(dst **string, v gjson.Result) bool {
	if v.Type == gjson.Null {
		*dst = nil
		return true
	}
	s, ok := plainString(v)
	if ok {
		*dst = &s
	}
	return ok
}

// plainList is decoder.list for plain input: a string (blank is absent) or
// an array of strings.
func plainList(v gjson.Result) ([]string, bool) {
	switch {
	case v.Type == gjson.Null:
		return nil, true
	case v.Type == gjson.String:
		s, ok := plainString(v)
		if !ok || strings.TrimSpace(s) == "" {
			return nil, ok
		}
		return []string{s}, true
	case !v.IsArray():
		return nil, false
	}
	out := []string{}
	ok := true
	v.ForEach(func(_, item gjson.Result) bool {
		var s string
		s, ok = plainString(item)
		out = append(out, s)
		return ok
	})
	return out, ok
}

// plainMap is decoder.strMap for plain input: an object of strings.
func plainMap(v gjson.Result) (map[string]string, bool) {
	if v.Type == gjson.Null {
		return nil, true
	}
	if !v.IsObject() {
		return nil, false
	}
	out := map[string]string{}
	ok := true
	v.ForEach(func(k, item gjson.Result) bool {
		var key, s string
		if key, ok = plainString(k); ok {
			s, ok = plainString(item)
			out[key] = s
		}
		return ok
	})
	return out, ok
}
