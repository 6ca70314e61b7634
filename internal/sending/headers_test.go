package sending

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

func TestValidateHeaders(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range MaxHeaders + 1 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	tests := []struct {
		name string
		h    map[string]string
		code string
	}{
		{name: "nil", h: nil},
		{name: "custom", h: map[string]string{"X-Campaign": "fall", "List-Unsubscribe": "<https://x.example/u>"}},
		{name: "threading allowed", h: map[string]string{"In-Reply-To": "<a@b>", "References": "<a@b> <c@d>"}},
		{name: "sender allowed", h: map[string]string{"Sender": "ops@example.com"}},
		{name: "tab and utf-8 in value", h: map[string]string{"X-Note": "a\tb ünïcode"}},
		{name: "empty value", h: map[string]string{"X-Empty": ""}},
		{name: "value at cap", h: map[string]string{"X-Long": strings.Repeat("a", MaxHeaderValueLen)}},
		{name: "value over cap", h: map[string]string{"X-Long": strings.Repeat("a", MaxHeaderValueLen+1)}, code: "invalid_request"},
		{name: "too many", h: many, code: "invalid_request"},
		{name: "CRLF injection", h: map[string]string{"X-A": "x\r\nBcc: victim@example.com"}, code: "invalid_request"},
		{name: "bare LF", h: map[string]string{"X-A": "x\ny"}, code: "invalid_request"},
		{name: "bare CR", h: map[string]string{"X-A": "x\ry"}, code: "invalid_request"},
		{name: "NUL", h: map[string]string{"X-A": "x\x00y"}, code: "invalid_request"},
		{name: "other control", h: map[string]string{"X-A": "x\x1by"}, code: "invalid_request"},
		{name: "empty name", h: map[string]string{"": "v"}, code: "invalid_header_name"},
		{name: "space in name", h: map[string]string{"X A": "v"}, code: "invalid_header_name"},
		{name: "colon in name", h: map[string]string{"X-A:": "v"}, code: "invalid_header_name"},
		{name: "newline in name", h: map[string]string{"X-A\r\nBcc": "v"}, code: "invalid_header_name"},
		{name: "non-ascii name", h: map[string]string{"X-Ü": "v"}, code: "invalid_header_name"},
		{name: "long name", h: map[string]string{"X-" + strings.Repeat("a", MaxHeaderName): "v"}, code: "invalid_header_name"},
	}
	for _, reserved := range []string{"Message-ID", "message-id", "Date", "From", "TO", "Cc", "bcc", "Reply-To",
		"Subject", "DKIM-Signature", "dkim-signature", "Return-Path", "MIME-Version", "Content-Type", "Content-Transfer-Encoding"} {
		tests = append(tests, struct {
			name string
			h    map[string]string
			code string
		}{name: "reserved " + reserved, h: map[string]string{reserved: "x"}, code: "reserved_header"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateHeaders(tt.h)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("ValidateHeaders: %v", err)
				}
				return
			}
			e, ok := apierr.As(err)
			if !ok || e.Code != tt.code || e.Status != http.StatusBadRequest {
				t.Fatalf("ValidateHeaders = %v, want %s", err, tt.code)
			}
		})
	}
}

func TestValidateHeadersNamesTheHeader(t *testing.T) {
	t.Parallel()
	err := ValidateHeaders(map[string]string{"X-Ok": "fine", "X-Bad": "a\nb"})
	if err == nil || !strings.Contains(err.Error(), "X-Bad") {
		t.Fatalf("error %v does not name X-Bad", err)
	}
	// Sorted order: the same body always reports the same header first.
	for range 20 {
		err := ValidateHeaders(map[string]string{"B-Bad": "a\nb", "A-Bad": "a\nb", "C-Bad": "a\nb"})
		if !strings.Contains(err.Error(), "A-Bad") {
			t.Fatalf("error %v, want A-Bad first", err)
		}
	}
}
