package config_test

import (
	"testing"

	"mailroom/internal/config"
)

// MAILROOM_SMTP_ADDR: unset takes the default; set to empty or "off" turns
// the inbound listener off (DESIGN.md's contract); anything else is the
// address. Other variables set to empty still take their defaults.
func TestSMTPAddr(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", map[string]string{}, ":2525"},
		{"empty", map[string]string{"MAILROOM_SMTP_ADDR": ""}, ""},
		{"off", map[string]string{"MAILROOM_SMTP_ADDR": "off"}, ""},
		{"address", map[string]string{"MAILROOM_SMTP_ADDR": "127.0.0.1:2626"}, "127.0.0.1:2626"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(config.Map(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.SMTPAddr != tc.want {
				t.Fatalf("SMTPAddr = %q, want %q", c.SMTPAddr, tc.want)
			}
		})
	}
	c, err := config.Load(config.Map(map[string]string{"MAILROOM_HTTP_ADDR": ""}))
	if err != nil || c.HTTPAddr != ":8080" {
		t.Fatalf("empty MAILROOM_HTTP_ADDR: %q %v", c.HTTPAddr, err)
	}
}
