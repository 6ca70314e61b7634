package sending

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

func TestDecodeAttachments(t *testing.T) {
	t.Parallel()
	payload := []byte("hello, \xff\xfe world?>") // bytes whose std and URL encodings differ
	std := base64.StdEncoding.EncodeToString(payload)
	tests := []struct {
		name     string
		in       AttachmentIn
		wantType string
		code     string
	}{
		{name: "standard", in: AttachmentIn{Filename: "a.bin", ContentBase64: std}, wantType: "application/octet-stream"},
		{name: "unpadded", in: AttachmentIn{Filename: "a.bin", ContentBase64: base64.RawStdEncoding.EncodeToString(payload)}, wantType: "application/octet-stream"},
		{name: "url-safe", in: AttachmentIn{Filename: "a.bin", ContentBase64: base64.URLEncoding.EncodeToString(payload)}, wantType: "application/octet-stream"},
		{name: "url-safe unpadded", in: AttachmentIn{Filename: "a.bin", ContentBase64: base64.RawURLEncoding.EncodeToString(payload)}, wantType: "application/octet-stream"},
		{name: "line breaks", in: AttachmentIn{Filename: "a.bin", ContentBase64: std[:8] + "\r\n" + std[8:16] + "\n " + std[16:]}, wantType: "application/octet-stream"},
		{name: "type guessed", in: AttachmentIn{Filename: "Invoice.PDF", ContentBase64: std}, wantType: "application/pdf"},
		{name: "type given", in: AttachmentIn{Filename: "a", ContentBase64: std, ContentType: "Text/Plain; Charset=UTF-8"}, wantType: "text/plain; charset=UTF-8"},
		{name: "unicode filename", in: AttachmentIn{Filename: "Rechnung ü.pdf", ContentBase64: std}, wantType: "application/pdf"},
		{name: "missing filename", in: AttachmentIn{ContentBase64: std}, code: "invalid_attachment"},
		{name: "blank filename", in: AttachmentIn{Filename: "  ", ContentBase64: std}, code: "invalid_attachment"},
		{name: "slash", in: AttachmentIn{Filename: "../etc/passwd", ContentBase64: std}, code: "invalid_attachment"},
		{name: "backslash", in: AttachmentIn{Filename: `a\b.txt`, ContentBase64: std}, code: "invalid_attachment"},
		{name: "dotdot", in: AttachmentIn{Filename: "..", ContentBase64: std}, code: "invalid_attachment"},
		{name: "CRLF filename", in: AttachmentIn{Filename: "a.txt\r\nX-Evil: 1", ContentBase64: std}, code: "invalid_attachment"},
		{name: "NUL filename", in: AttachmentIn{Filename: "a\x00.txt", ContentBase64: std}, code: "invalid_attachment"},
		{name: "long filename", in: AttachmentIn{Filename: strings.Repeat("a", 256), ContentBase64: std}, code: "invalid_attachment"},
		{name: "missing content", in: AttachmentIn{Filename: "a.txt"}, code: "invalid_attachment"},
		{name: "whitespace content", in: AttachmentIn{Filename: "a.txt", ContentBase64: " \n "}, code: "invalid_attachment"},
		{name: "data url", in: AttachmentIn{Filename: "a.png", ContentBase64: "data:image/png;base64," + std}, code: "invalid_attachment"},
		{name: "DATA url", in: AttachmentIn{Filename: "a.png", ContentBase64: "DATA:image/png;base64," + std}, code: "invalid_attachment"},
		{name: "not base64", in: AttachmentIn{Filename: "a.txt", ContentBase64: "not base64!"}, code: "invalid_attachment"},
		{name: "mixed alphabets", in: AttachmentIn{Filename: "a.txt", ContentBase64: "ab+-"}, code: "invalid_attachment"},
		{name: "bad padding", in: AttachmentIn{Filename: "a.txt", ContentBase64: "YQ="}, code: "invalid_attachment"},
		{name: "bad content type", in: AttachmentIn{Filename: "a.txt", ContentBase64: std, ContentType: "pdf"}, code: "invalid_attachment"},
		{name: "content type with newline", in: AttachmentIn{Filename: "a.txt", ContentBase64: std, ContentType: "text/plain\r\nX: y"}, code: "invalid_attachment"},
		{name: "multipart content type", in: AttachmentIn{Filename: "a.txt", ContentBase64: std, ContentType: "multipart/mixed; boundary=x"}, code: "invalid_attachment"},
		{name: "content id", in: AttachmentIn{Filename: "logo.png", ContentBase64: std, ContentID: "<logo.1@acme.example>"}, wantType: "image/png"},
		{name: "content id with a space", in: AttachmentIn{Filename: "logo.png", ContentBase64: std, ContentID: "logo 1"}, code: "invalid_attachment"},
		{name: "content id with CRLF", in: AttachmentIn{Filename: "logo.png", ContentBase64: std, ContentID: "a\r\nX: y"}, code: "invalid_attachment"},
		{name: "blank content id", in: AttachmentIn{Filename: "logo.png", ContentBase64: std, ContentID: " <> "}, code: "invalid_attachment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total, err := DecodeAttachments([]AttachmentIn{tt.in})
			if tt.code != "" {
				e, ok := apierr.As(err)
				if !ok || e.Code != tt.code || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "attachments[0]") {
					t.Fatalf("DecodeAttachments = %v, want %s naming attachments[0]", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeAttachments: %v", err)
			}
			if !bytes.Equal(got[0].Content, payload) || got[0].ContentType != tt.wantType {
				t.Fatalf("got %q %q, want %q %q", got[0].Content, got[0].ContentType, payload, tt.wantType)
			}
			if tt.in.ContentID != "" && got[0].ContentID != "logo.1@acme.example" {
				t.Fatalf("content id %q", got[0].ContentID)
			}
			if total != base64Length(tt.in.ContentBase64) {
				t.Fatalf("total %d", total)
			}
		})
	}
}

func TestDecodeAttachmentsSizeLimit(t *testing.T) {
	t.Parallel()
	half := strings.Repeat("A", MaxAttachmentsBase64/2)
	// Exactly 40 MB across two files passes.
	got, total, err := DecodeAttachments([]AttachmentIn{{Filename: "a", ContentBase64: half}, {Filename: "b", ContentBase64: half}})
	if err != nil || total != MaxAttachmentsBase64 || len(got) != 2 {
		t.Fatalf("at the limit: %v, total %d", err, total)
	}
	// One byte over answers 413 before any decoding: the invalid second
	// attachment (no filename) would otherwise be reported first.
	_, _, err = DecodeAttachments([]AttachmentIn{{Filename: "a", ContentBase64: half}, {ContentBase64: half + "AAAA"}})
	if e, ok := apierr.As(err); !ok || e.Code != "attachments_too_large" || e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
	// Line breaks do not count against the limit.
	wrapped := strings.Repeat(strings.Repeat("A", 76)+"\r\n", MaxAttachmentsBase64/76)
	if _, total, err := DecodeAttachments([]AttachmentIn{{Filename: "a", ContentBase64: wrapped}}); err != nil || total > MaxAttachmentsBase64 {
		t.Fatalf("wrapped: %v, total %d", err, total)
	}
}

func TestDecodeAttachmentsNone(t *testing.T) {
	t.Parallel()
	got, total, err := DecodeAttachments(nil)
	if err != nil || total != 0 || len(got) != 0 {
		t.Fatalf("got %v %d %v", got, total, err)
	}
}
