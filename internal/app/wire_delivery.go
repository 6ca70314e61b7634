package app

import (
	"crypto/tls"
	"fmt"

	"github.com/riverqueue/river"

	"mailroom/internal/delivery"
	"mailroom/internal/dnsresolve"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/smtpin"
)

// deliveryParts are the delivery engine's pieces the App exposes.
type deliveryParts struct {
	service *delivery.Service
	smtp    *smtpin.Server
}

// wireDelivery builds the delivery engine (one transport per node, so SMTP
// sessions are pooled across jobs), registers the deliver worker on its own
// queue and the inbound SMTP listener for bounces and complaints.
func (a *App) wireDelivery(w *wiring) error {
	cfg := a.Config
	var transport delivery.Transport
	if cfg.Outbound == "mx" {
		transport = outbound.NewMX(delivery.NewMXResolver(dnsresolve.New(cfg.DNSResolver)), outbound.MXOptions{
			Port: cfg.SMTPPort, HeloName: cfg.HeloName, Clock: a.Clock,
		})
	} else {
		opts := outbound.RelayOptions{HeloName: cfg.HeloName, MaxConns: max(10, cfg.DeliveryConcurrency/2), Clock: a.Clock}
		if cfg.RelayInsecureSkipTLS {
			opts.TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // operator's explicit choice (MAILROOM_OUTBOUND_INSECURE_TLS)
		}
		r, err := outbound.NewRelay(cfg.Outbound, opts)
		if err != nil {
			return fmt.Errorf("MAILROOM_OUTBOUND: %w", err)
		}
		transport = r
	}
	var keys delivery.Keys
	if k, ok := any(a.services.Domains).(delivery.Keys); ok && a.services.Domains != nil {
		keys = k
	}
	svc := delivery.New(delivery.Config{
		DB: a.DB, Clock: a.Clock, Log: a.Log.With("component", "delivery"),
		Transport: transport, Keys: keys, ServiceDomain: cfg.ServiceDomain,
		Concurrency: max(1, cfg.DeliveryConcurrency), Registry: a.Registry,
	})
	river.AddWorker(w.workers, &delivery.Worker{Service: svc})
	river.AddWorker(w.workers, &delivery.BatchWorker{Service: svc})
	if w.queues == nil {
		w.queues = map[string]river.QueueConfig{}
	}
	w.queues[jobs.QueueDeliver] = river.QueueConfig{MaxWorkers: max(1, cfg.DeliveryConcurrency)}

	var smtpTLS *tls.Config
	if cfg.SMTPTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.SMTPTLSCert, cfg.SMTPTLSKey)
		if err != nil {
			return fmt.Errorf("MAILROOM_SMTP_TLS_CERT / MAILROOM_SMTP_TLS_KEY: %w", err)
		}
		smtpTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	// Special addresses' routers go before the mailboxes.
	var routers []smtpin.Router
	if a.services.Inbound != nil {
		routers = append(routers, a.services.Inbound)
	}
	in := smtpin.New(smtpin.Options{
		Addr: cfg.SMTPAddr, Domain: cfg.InboundHost, Handler: svc, Routers: routers, Log: a.Log.With("component", "smtpin"),
		MaxBytes: int64(cfg.SMTPMaxBytes), MaxRecipients: cfg.SMTPMaxRecipients, MaxSessions: cfg.SMTPMaxSessions,
		Timeout: cfg.SMTPTimeout, TLS: smtpTLS,
	})
	a.delivery = deliveryParts{service: svc, smtp: in}
	a.background = append(a.background, svc, in)
	return nil
}

// Delivery is the node's delivery engine.
func (a *App) Delivery() *delivery.Service { return a.delivery.service }

// SMTPAddr is the address the inbound SMTP listener is bound to ("" when
// MAILROOM_SMTP_ADDR is empty or the node is not started).
func (a *App) SMTPAddr() string { return a.delivery.smtp.Addr() }
