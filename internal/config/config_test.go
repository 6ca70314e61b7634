package config_test

import (
	"strings"
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

// MAILROOM_OUTBOUND_IPS entries are IP addresses or prefixes, normalised;
// anything else (an SPF term, a host name) stops the start and names the
// setting that takes it. MAILROOM_SPF_AUTHORIZE takes include/a/mx/ip terms.
func TestOutboundIPsAndSPFAuthorize(t *testing.T) {
	c, err := config.Load(config.Map(map[string]string{
		"MAILROOM_OUTBOUND_IPS":  " 192.0.2.10, 2001:DB8::10 ,198.51.100.0/24,::ffff:203.0.113.5",
		"MAILROOM_SPF_AUTHORIZE": "include:_spf.Relay.example a mx:relay.example ip4:203.0.113.0/28",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.OutboundIPs, " "); got != "192.0.2.10 2001:db8::10 198.51.100.0/24 203.0.113.5" {
		t.Errorf("OutboundIPs = %s", got)
	}
	if got := strings.Join(c.SPFAuthorize, " "); got != "include:_spf.relay.example a mx:relay.example ip4:203.0.113.0/28" {
		t.Errorf("SPFAuthorize = %s", got)
	}
	for _, bad := range []struct{ k, v, want string }{
		{"MAILROOM_OUTBOUND_IPS", "include:_spf.relay.example", `MAILROOM_OUTBOUND_IPS: "include:_spf.relay.example" is not an IP address`},
		{"MAILROOM_OUTBOUND_IPS", "192.0.2.10,mail.example.com", `"mail.example.com" is not an IP address`},
		{"MAILROOM_OUTBOUND_IPS", "192.0.2.300", `"192.0.2.300" is not an IP address`},
		{"MAILROOM_SPF_AUTHORIZE", "redirect=_spf.example", `MAILROOM_SPF_AUTHORIZE: "redirect=_spf.example"`},
		{"MAILROOM_SPF_AUTHORIZE", "include", `needs a domain`},
		{"MAILROOM_SPF_AUTHORIZE", "ip4:2001:db8::1", `is not an ip4 address`},
		{"MAILROOM_SPF_AUTHORIZE", "include:bad domain", `does not name a domain`},
	} {
		_, err := config.Load(config.Map(map[string]string{bad.k: bad.v}))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s=%q: err %v, want %q", bad.k, bad.v, err, bad.want)
		}
	}
}

// MAILROOM_LIBCRYPTO is auto (the default) or off; anything else stops the
// start with the setting named.
func TestLibcrypto(t *testing.T) {
	for env, want := range map[string]bool{"": true, "auto": true, "off": false} {
		c, err := config.Load(config.Map(map[string]string{"MAILROOM_LIBCRYPTO": env}))
		if err != nil || c.Libcrypto != want {
			t.Fatalf("MAILROOM_LIBCRYPTO=%q: Libcrypto %v, %v; want %v", env, c.Libcrypto, err, want)
		}
	}
	if _, err := config.Load(config.Map(map[string]string{"MAILROOM_LIBCRYPTO": "on"})); err == nil || !strings.Contains(err.Error(), "MAILROOM_LIBCRYPTO") {
		t.Fatalf("MAILROOM_LIBCRYPTO=on: %v", err)
	}
}

// MAILROOM_FBL_SENDERS takes addresses and domains; MAILROOM_FBL_TRUSTED_IPS
// addresses and prefixes. Anything else stops the start, naming the setting.
func TestFeedbackSources(t *testing.T) {
	c, err := config.Load(config.Map(map[string]string{
		"MAILROOM_FBL_SENDERS":     "FBL.isp.example, staff@Mail.example  reports.example.net",
		"MAILROOM_FBL_TRUSTED_IPS": "192.0.2.10, 10.0.0.0/8,2001:db8::/32",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Feedback.Senders, " "); got != "fbl.isp.example staff@mail.example reports.example.net" {
		t.Errorf("Senders = %s", got)
	}
	var ips []string
	for _, p := range c.Feedback.TrustedIPs {
		ips = append(ips, p.String())
	}
	if got := strings.Join(ips, " "); got != "192.0.2.10/32 10.0.0.0/8 2001:db8::/32" {
		t.Errorf("TrustedIPs = %s", got)
	}
	for _, bad := range []struct{ k, v, want string }{
		{"MAILROOM_FBL_SENDERS", "localhost", `MAILROOM_FBL_SENDERS: "localhost" is not a domain`},
		{"MAILROOM_FBL_SENDERS", "@isp.example", `"@isp.example" is not a domain`},
		{"MAILROOM_FBL_TRUSTED_IPS", "isp.example", `MAILROOM_FBL_TRUSTED_IPS: "isp.example" is not an IP address or prefix`},
	} {
		if _, err := config.Load(config.Map(map[string]string{bad.k: bad.v})); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s=%s: %v, want %s", bad.k, bad.v, err, bad.want)
		}
	}
}

// TestOutboundAllowPrivate: unset, it follows MAILROOM_WEBHOOK_ALLOW_PRIVATE;
// set, it says for itself.
func TestOutboundAllowPrivate(t *testing.T) {
	for _, tc := range []struct {
		webhook, outbound string
		want              bool
	}{{"", "", false}, {"true", "", true}, {"true", "false", false}, {"", "true", true}, {"false", "true", true}} {
		c, err := config.Load(config.Map(map[string]string{"MAILROOM_WEBHOOK_ALLOW_PRIVATE": tc.webhook, "MAILROOM_OUTBOUND_ALLOW_PRIVATE": tc.outbound}))
		if err != nil || c.OutboundAllowPrivate != tc.want {
			t.Errorf("webhook %q outbound %q: %v, %v; want %v", tc.webhook, tc.outbound, c.OutboundAllowPrivate, err, tc.want)
		}
	}
	if _, err := config.Load(config.Map(map[string]string{"MAILROOM_OUTBOUND_ALLOW_PRIVATE": "yes"})); err == nil || !strings.Contains(err.Error(), "MAILROOM_OUTBOUND_ALLOW_PRIVATE") {
		t.Fatalf("yes: %v", err)
	}
}

// TestMetricsSettings: a short token and a metrics address that is the API's
// are refused in words.
func TestMetricsSettings(t *testing.T) {
	for env, want := range map[string]string{"MAILROOM_METRICS_TOKEN": "short", "MAILROOM_METRICS_ADDR": ":8080"} {
		if _, err := config.Load(config.Map(map[string]string{env: want})); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=%q: %v", env, want, err)
		}
	}
	c, err := config.Load(config.Map(map[string]string{"MAILROOM_METRICS_TOKEN": "0123456789abcdef", "MAILROOM_METRICS_ADDR": "127.0.0.1:9090"}))
	if err != nil || c.MetricsToken != "0123456789abcdef" || c.MetricsAddr != "127.0.0.1:9090" {
		t.Fatalf("%+v %v", c, err)
	}
}
