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
		HTTPBodyTimeout: 30 * time.Second, HTTPUploadTimeout: 5 * time.Minute, HTTPMaxBodies: 256, HTTPMaxBodiesPerIP: 64,
		MinFreeDisk: config.FreeDisk{Bytes: 512 << 20, Percent: 5, Text: "512MB,5%"}}
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
		"MAILROOM_MIN_FREE_DISK":            "lots",
	} {
		if _, err := config.Load(config.Map(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}

// MAILROOM_MIN_FREE_DISK reads sizes in binary units, shares, both, and 0.
func TestParseFreeDisk(t *testing.T) {
	for v, want := range map[string]config.FreeDisk{
		"512MB":     {Bytes: 512 << 20},
		"2gb":       {Bytes: 2 << 30},
		"1.5G":      {Bytes: 3 << 29},
		"1048576":   {Bytes: 1 << 20},
		"100000TB":  {Bytes: 100000 << 40},
		"5%":        {Percent: 5},
		"1GB, 2.5%": {Bytes: 1 << 30, Percent: 2.5},
		"0":         {},
	} {
		got, err := config.ParseFreeDisk(v)
		want.Text = v
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "MB", "-1MB", "100%", "5%,6%", "1GB,2GB", "12XB"} {
		if _, err := config.ParseFreeDisk(v); err == nil || !strings.Contains(err.Error(), "MAILROOM_MIN_FREE_DISK") {
			t.Errorf("%q: %v, want an error naming the setting", v, err)
		}
	}
}
