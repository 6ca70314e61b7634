package config_test

import (
	"strings"
	"testing"
	"time"

	"mailroom/internal/config"
)

// The connection limits take their defaults unset, read what is set, and
// name the variable and its bound when a value is out of bounds.
func TestLimits(t *testing.T) {
	c, err := config.Load(config.Map(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Limits{SMTPSessionsPerIP: 50, SMTPMaxSession: 10 * time.Minute, SMTPMaxCommands: 1000,
		HTTPBodyTimeout: 30 * time.Second, HTTPUploadTimeout: 5 * time.Minute, HTTPMaxBodies: 256, HTTPMaxBodiesPerIP: 64}
	if c.Limits != want {
		t.Fatalf("defaults %+v, want %+v", c.Limits, want)
	}
	c, err = config.Load(config.Map(map[string]string{"MAILROOM_SMTP_MAX_SESSIONS_PER_IP": "3", "MAILROOM_HTTP_BODY_TIMEOUT": "5s"}))
	if err != nil || c.Limits.SMTPSessionsPerIP != 3 || c.Limits.HTTPBodyTimeout != 5*time.Second {
		t.Fatalf("set: %+v, %v", c.Limits, err)
	}
	for k, v := range map[string]string{
		"MAILROOM_SMTP_MAX_SESSIONS_PER_IP": "0",
		"MAILROOM_SMTP_MAX_COMMANDS":        "5",
		"MAILROOM_SMTP_MAX_SESSION":         "500ms",
		"MAILROOM_HTTP_UPLOAD_TIMEOUT":      "soon",
		"MAILROOM_HTTP_MAX_BODIES_PER_IP":   "-1",
	} {
		if _, err := config.Load(config.Map(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}
