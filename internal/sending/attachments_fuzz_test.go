package sending

import (
	"encoding/base64"
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

func FuzzDecodeAttachments(f *testing.F) {
	f.Add("a.pdf", "aGVsbG8=", "")
	f.Add("a.txt", "aGVsbG8", "text/plain; charset=utf-8")
	f.Add("a", "data:image/png;base64,aGVsbG8=", "image/png")
	f.Add("../x", "_-8=", "application/x; a=\"b\"")
	f.Add("a\r\nb", "aGVs\r\nbG8=", "multipart/mixed")
	f.Fuzz(func(t *testing.T, filename, content, contentType string) {
		got, total, err := DecodeAttachments([]AttachmentIn{{Filename: filename, ContentBase64: content, ContentType: contentType}})
		if err != nil {
			if e, ok := apierr.As(err); !ok || (e.Code != "invalid_attachment" && e.Code != "attachments_too_large") {
				t.Fatalf("error %v", err)
			}
			return
		}
		a := got[0]
		if a.Filename == "" || strings.ContainsAny(a.Filename, "/\\\r\n\x00") || hasControl(a.ContentType) || a.ContentType == "" {
			t.Fatalf("accepted %+v", a)
		}
		if total > MaxAttachmentsBase64 || int64(len(base64.StdEncoding.EncodeToString(a.Content))) > total+3 {
			t.Fatalf("size %d does not match %d decoded bytes", total, len(a.Content))
		}
	})
}
