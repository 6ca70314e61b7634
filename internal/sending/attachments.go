package sending

import (
	"encoding/base64"
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"mailroom/internal/apierr"
)

// MaxAttachmentsBase64 is the spec's 40 MB per message, counted on the
// base64 text (whitespace excluded) before anything is decoded. Decimal:
// over 40 MB by either reading is refused, and attachments just under it
// still assemble under MaxMessageSize (40 MiB) with MIME's line breaks.
const MaxAttachmentsBase64 = 40_000_000

const maxFilename = 255

// AttachmentIn is one attachment as the caller sent it.
type AttachmentIn struct {
	Filename      string
	ContentBase64 string
	ContentType   string
	ContentID     string // content_id: an inline image the html shows as cid:<id>
}

// Attachment is a decoded attachment ready for MIME assembly.
type Attachment struct {
	Filename    string
	ContentType string // always set; guessed from the extension when omitted
	Content     []byte
	ContentID   string // "" for an attachment; else an inline image (multipart/related)
}

// DecodeAttachments checks and decodes the caller's attachments. It returns
// the decoded attachments and the total base64 length that counted against
// the 40 MB limit.
//
// The size is checked first, before any decoding: over the limit answers 413
// attachments_too_large. Then each attachment needs a filename (no path
// separators, control characters or line breaks) and non-empty content;
// base64 may be standard or URL-safe, padded or not, with line breaks; a
// "data:" URL prefix is refused. A content_type, when given, must be a valid
// media type. Other failures answer 400 invalid_attachment naming the index.
func DecodeAttachments(in []AttachmentIn) ([]Attachment, int64, error) {
	var total int64
	for _, a := range in {
		total += base64Length(a.ContentBase64)
	}
	if total > MaxAttachmentsBase64 {
		return nil, total, apierr.TooLarge("attachments_too_large",
			"Attachments total %d bytes after base64; at most %d (40 MB) are allowed per message.", total, MaxAttachmentsBase64)
	}
	out := make([]Attachment, 0, len(in))
	for i, a := range in {
		att, err := decodeAttachment(i, a)
		if err != nil {
			return nil, total, err
		}
		out = append(out, att)
	}
	return out, total, nil
}

func decodeAttachment(i int, a AttachmentIn) (Attachment, error) {
	name := strings.TrimSpace(a.Filename)
	if name == "" {
		return Attachment{}, attErr(i, "filename is required")
	}
	if len(name) > maxFilename {
		return Attachment{}, attErr(i, "filename is longer than 255 bytes")
	}
	if !utf8.ValidString(name) || hasControl(name) {
		return Attachment{}, attErr(i, "filename contains a control character, a line break or invalid UTF-8")
	}
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return Attachment{}, attErr(i, `filename must be a plain file name without / or \`)
	}
	b64 := strings.TrimSpace(a.ContentBase64)
	if b64 == "" {
		return Attachment{}, attErr(i, "content_base64 is required")
	}
	if len(b64) >= 5 && strings.EqualFold(b64[:5], "data:") {
		return Attachment{}, attErr(i, "content_base64 must be bare base64 without a data: URL prefix")
	}
	content, ok := decodeBase64(b64)
	if !ok {
		return Attachment{}, attErr(i, "content_base64 is not valid base64")
	}
	ct := strings.TrimSpace(a.ContentType)
	if ct == "" {
		ct = contentTypeFor(name)
	} else {
		formatted := ""
		mt, params, err := mime.ParseMediaType(ct)
		if err == nil && strings.Count(mt, "/") == 1 && !strings.HasPrefix(mt, "multipart/") && !hasControl(ct) {
			formatted = mime.FormatMediaType(mt, params)
		}
		if formatted == "" {
			return Attachment{}, attErr(i, "content_type %q is not a valid media type such as application/pdf", clip(ct))
		}
		ct = formatted
	}
	cid := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(a.ContentID), "<"), ">")
	if a.ContentID != "" && !validContentID(cid) {
		return Attachment{}, attErr(i, "content_id must be 1 to 250 printable ASCII characters without spaces, <, > or quotes")
	}
	return Attachment{Filename: name, ContentType: ct, Content: content, ContentID: cid}, nil
}

// base64Length counts the characters that carry data, so that line breaks
// some encoders insert every 76 characters do not push a file over the limit.
func base64Length(s string) int64 {
	var n int64
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
		default:
			n++
		}
	}
	return n
}

// decodeBase64 accepts the standard and URL-safe alphabets, padded or not,
// ignoring whitespace. The alphabets differ only in two characters, so the
// leniency cannot misread a valid input.
func decodeBase64(s string) ([]byte, bool) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, s)
	if s == "" {
		return nil, false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// contentTypeFor guesses from the extension with a fixed table: the system
// MIME database differs between machines, and the same send must produce the
// same message everywhere.
func contentTypeFor(filename string) string {
	switch strings.ToLower(path.Ext(filename)) {
	case ".pdf":
		return "application/pdf"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".svg":
		return "image/svg+xml"
	case ".txt":
		return "text/plain; charset=utf-8"
	case ".csv":
		return "text/csv; charset=utf-8"
	case ".html", ".htm":
		return "text/html; charset=utf-8"
	case ".ics":
		return "text/calendar; charset=utf-8"
	case ".json":
		return "application/json"
	case ".xml":
		return "application/xml"
	case ".zip":
		return "application/zip"
	case ".doc":
		return "application/msword"
	case ".docx":
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	case ".xls":
		return "application/vnd.ms-excel"
	case ".xlsx":
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	case ".eml":
		return "message/rfc822"
	}
	return "application/octet-stream"
}

func attErr(i int, format string, args ...any) error {
	return apierr.BadRequest("invalid_attachment", "attachments[%d]: %s.", i, fmt.Sprintf(format, args...))
}

// validContentID reports whether id can be written as a Content-ID
// (RFC 2392: <id> in a header, cid:id in the html) as it is.
func validContentID(id string) bool {
	if id == "" || len(id) > 250 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || strings.IndexByte(`<>"\()`, c) >= 0 {
			return false
		}
	}
	return true
}
