package smtpsink

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

func TestRecipientRules(t *testing.T) {
	t.Parallel()
	s := Start(t)
	tests := []struct {
		rcpt     string
		wantCode int // 0 = accepted
		dropped  bool
	}{
		{rcpt: "ok@example.com"},
		{rcpt: "reject-me@example.com", wantCode: 550},
		{rcpt: "defer.me@example.com", wantCode: 451},
		{rcpt: "drop@example.com", dropped: true},
	}
	for _, tt := range tests {
		t.Run(tt.rcpt, func(t *testing.T) {
			c, err := smtp.Dial(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Mail("a@b.test", nil); err != nil {
				t.Fatal(err)
			}
			err = c.Rcpt(tt.rcpt, nil)
			var se *smtp.SMTPError
			switch {
			case tt.dropped:
				if err == nil || errors.As(err, &se) {
					t.Fatalf("want connection error, got %v", err)
				}
			case tt.wantCode != 0:
				if !errors.As(err, &se) || se.Code != tt.wantCode {
					t.Fatalf("want %d, got %v", tt.wantCode, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestAuthTLSAndWaitFor(t *testing.T) {
	t.Parallel()
	srvCfg, pool := SelfSigned(t)
	s := Start(t, WithAuth("u", "p"), WithTLS(srvCfg))
	c, err := smtp.DialStartTLS(s.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail("a@b.test", nil); err == nil {
		t.Fatal("MAIL before AUTH accepted")
	}
	if err := c.Auth(sasl.NewPlainClient("", "u", "p")); err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail("a@b.test", []string{"x@y.test"}, strings.NewReader("Subject: hi\r\n\r\nbody\r\n")); err != nil {
		t.Fatal(err)
	}
	got := s.WaitFor(1, 5*time.Second)
	if len(got) != 1 || got[0].From != "a@b.test" || got[0].To[0] != "x@y.test" || !strings.Contains(string(got[0].Data), "body") {
		t.Fatalf("got %+v", got)
	}
	if s.WaitFor(2, 50*time.Millisecond); s.Count() != 1 {
		t.Fatalf("count %d", s.Count())
	}
}

func TestImplicitTLS(t *testing.T) {
	t.Parallel()
	srvCfg, pool := SelfSigned(t)
	s := Start(t, WithImplicitTLS(srvCfg))
	c, err := smtp.DialTLS(s.Addr(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("a@b.test", []string{"x@y.test"}, strings.NewReader("\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	if n := len(s.WaitFor(1, 5*time.Second)); n != 1 {
		t.Fatalf("got %d", n)
	}
}
