package app

import (
	"crypto/tls"
	"fmt"

	"mailroom/internal/config"
	"mailroom/internal/ratelimit"
	"mailroom/internal/smtplimit"
	"mailroom/internal/submission"
)

// wireSubmission builds the SMTP submission listener. It is appended to
// the background parts after the sending service, so it stops first: every
// message it answered 250 has committed.
func (a *App) wireSubmission(limiter ratelimit.Limiter) error {
	cfg := a.Config
	var cert *tls.Config
	if cfg.SMTPTLSCert != "" {
		c, err := tls.LoadX509KeyPair(cfg.SMTPTLSCert, cfg.SMTPTLSKey)
		if err != nil {
			return fmt.Errorf("MAILROOM_SMTP_TLS_CERT / MAILROOM_SMTP_TLS_KEY: %w", err)
		}
		cert = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
	}
	a.submission = submission.New(submission.Options{
		Addr: cfg.SubmissionAddr, TLSAddr: cfg.SubmissionTLSAddr, TLS: cert, Domain: cfg.HeloName,
		Sender: a.services.Sending, Keys: a.Workspaces, Limiter: limiter, KeyLimit: cfg.RateLimit,
		Log: a.Log.With("component", "submission"), Timeout: cfg.SMTPTimeout,
		Caps: smtpCaps(cfg), Meter: a.Meter, DiskFull: a.disk.Full,
	})
	a.background = append(a.background, a.submission)
	return nil
}

// SubmissionAddr is the SMTP submission listener's address (STARTTLS, or
// plain for loopback clients); "" when off or not started.
func (a *App) SubmissionAddr() string { return a.submission.Addr() }

// SubmissionTLSAddr is the implicit-TLS submission listener's address.
func (a *App) SubmissionTLSAddr() string { return a.submission.TLSAddr() }

// smtpCaps are the caps of both SMTP servers, inbound and submission.
func smtpCaps(cfg *config.Config) smtplimit.Caps {
	return smtplimit.Caps{MaxSessions: cfg.SMTPMaxSessions, PerIP: cfg.Limits.SMTPSessionsPerIP,
		MaxDuration: cfg.Limits.SMTPMaxSession, MaxCommands: cfg.Limits.SMTPMaxCommands}
}
