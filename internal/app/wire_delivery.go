package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"mailroom/internal/capture"
	"mailroom/internal/delivery"
	"mailroom/internal/dnsresolve"
	"mailroom/internal/domains"
	"mailroom/internal/jobs"
	"mailroom/internal/netpolicy"
	"mailroom/internal/outbound"
	"mailroom/internal/smtpin"
	"mailroom/internal/topics"
)

// deliveryParts are the delivery engine's pieces the App exposes.
type deliveryParts struct {
	service *delivery.Service
	smtp    *smtpin.Server
	verp    *outbound.VERP
}

// wireDelivery builds the delivery engine (one transport per node, so SMTP
// sessions are pooled across jobs), registers the deliver worker on its own
// queue and the inbound SMTP listener for bounces and complaints.
func (a *App) wireDelivery(w *wiring) error {
	cfg := a.Config
	transport, err := a.newTransport()
	if err != nil {
		return err
	}
	a.deliverabilityWarnings()
	var keys delivery.Keys
	if k, ok := any(a.services.Domains).(delivery.Keys); ok && a.services.Domains != nil {
		keys = k
	}
	// Return paths carry a MAC under a key of their own, so that only
	// Mailroom's envelopes take bounces (docs/decisions.md).
	verp := outbound.NewVERP(func(b []byte) []byte { return a.Box.MAC("verp", b) })
	var optOut delivery.OptOut
	if t := a.services.Topics; t != nil {
		optOut = func(ws, topic, email string) delivery.PersonalLinks {
			l := t.Links(ws, topic, email)
			return delivery.PersonalLinks{ListUnsubscribe: l.ListUnsubscribe, Unsubscribe: l.Unsubscribe, Preferences: l.Preferences}
		}
	}
	svc := delivery.New(delivery.Config{
		DB: a.DB, Clock: a.Clock, Log: a.Log.With("component", "delivery"),
		Transport: transport, Keys: keys, ServiceDomain: cfg.ServiceDomain, VERP: verp,
		Feedback: delivery.FeedbackSources{
			Senders:    slices.Concat(delivery.DefaultFeedbackSenders, cfg.Feedback.Senders),
			TrustedIPs: cfg.Feedback.TrustedIPs,
			Resolver:   domains.NewResolver(cfg.DNSResolver),
		},
		Concurrency: max(1, cfg.DeliveryConcurrency), Registry: a.Registry, Links: w.links,
		Reputation: a.services.Policy, Sources: a.services.Policy, Meter: a.Meter,
		OptOut: optOut, Bodies: broadcastBodies{a},
		// A node without a heartbeat stops sending before the others may
		// take its work over (a fencing token guards the rest).
		Live: a.node.Live,
		// Outcome writes end their tries before the queue would rescue the
		// job (its timeout is the other half).
		OutcomeRetryFor: cfg.JobRescueAfter / 2,
	})

	a.services.Delivery = svc
	if a.services.Sending != nil {
		a.services.Sending.SetPreviewer(svc) // a dry run's message, built and signed as delivery does
	}
	river.AddWorker(w.workers, &delivery.Worker{Service: svc})
	river.AddWorker(w.workers, &delivery.BatchWorker{Service: svc})
	river.AddWorker(w.workers, &delivery.MarketingBatchWorker{Service: svc})
	if w.queues == nil {
		w.queues = map[string]river.QueueConfig{}
	}
	w.queues[jobs.QueueDeliver] = river.QueueConfig{MaxWorkers: max(1, cfg.DeliveryConcurrency)}
	// Marketing has its own lane: a few batch jobs (each delivering up to
	// MaxDeliverBatch emails on the marketing slots), so a broadcast never
	// fills the transactional queue or its slots.
	w.queues[jobs.QueueMarketing] = river.QueueConfig{MaxWorkers: 8}

	in, err := a.newSMTPListener(svc, verp)
	if err != nil {
		return err
	}
	a.delivery = deliveryParts{service: svc, smtp: in, verp: verp}
	a.background = append(a.background, svc, in)
	return nil
}

// newTransport is how mail leaves this node: kept (development), sent to
// each recipient's MX, or handed to the operator's relay.
func (a *App) newTransport() (delivery.Transport, error) {
	cfg := a.Config
	switch {
	case cfg.Captures():
		// Development: every message is kept, none sent (mailroom dev).
		c := capture.New(a.DB, a.Clock)
		a.services.Capture = c
		return c, nil
	case cfg.Outbound == "mx":
		dns := dnsresolve.New(cfg.DNSResolver)
		tlsResults := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mailroom_outbound_tls_results_total",
			Help: "Outbound SMTP sessions under a receiving domain's MTA-STS policy, by TLS-RPT result (success or the RFC 8460 failure type).",
		}, []string{"result"})
		a.Registry.MustRegister(tlsResults)
		log := a.Log.With("component", "mta-sts")
		return outbound.NewMX(delivery.NewMXResolver(dns), outbound.MXOptions{
			Port: cfg.SMTPPort, HeloName: cfg.HeloName, Clock: a.Clock, CommandTimeout: cfg.OutboundCommandTimeout,
			STSResolver: delivery.NewSTSResolver(dns),
			// Exchangers and policy hosts come from the recipient's DNS; the relay below is the operator's.
			Policy: netpolicy.New(cfg.OutboundAllowPrivate),
			OnTLSResult: func(r outbound.TLSResult) {
				tlsResults.WithLabelValues(r.Result).Inc()
				if r.Result != outbound.TLSSuccess {
					log.Warn("TLS failure under an MTA-STS policy", "domain", r.PolicyDomain, "mx", r.MXHost, "result", r.Result, "detail", r.Detail)
				}
			},
		}), nil
	default:
		opts := outbound.RelayOptions{HeloName: cfg.HeloName, MaxConns: max(10, cfg.DeliveryConcurrency/2), Clock: a.Clock, CommandTimeout: cfg.OutboundCommandTimeout}
		if cfg.RelayInsecureSkipTLS {
			opts.TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // operator's explicit choice (MAILROOM_OUTBOUND_INSECURE_TLS)
		}
		r, err := outbound.NewRelay(cfg.Outbound, opts)
		if err != nil {
			return nil, fmt.Errorf("MAILROOM_OUTBOUND: %w", err)
		}
		return r, nil
	}
}

// newSMTPListener is the inbound SMTP listener: bounces and complaints go
// to svc, the unsubscribe address and mailboxes to their routers.
func (a *App) newSMTPListener(svc *delivery.Service, verp *outbound.VERP) (*smtpin.Server, error) {
	cfg := a.Config
	var smtpTLS *tls.Config
	if cfg.SMTPTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.SMTPTLSCert, cfg.SMTPTLSKey)
		if err != nil {
			return nil, fmt.Errorf("MAILROOM_SMTP_TLS_CERT / MAILROOM_SMTP_TLS_KEY: %w", err)
		}
		smtpTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	// Special addresses' routers go before the mailboxes.
	var routers []smtpin.Router
	if a.services.Topics != nil { // the mailto: form of List-Unsubscribe
		routers = append(routers, smtpin.UnsubscribeRouter{
			Address: topics.UnsubscribeLocalPart + "@" + cfg.ServiceDomain, Act: a.services.Topics.UnsubscribeMail,
			Log: a.Log.With("component", "smtpin"),
		})
	}
	if a.services.Inbound != nil {
		routers = append(routers, a.services.Inbound)
	}
	return smtpin.New(smtpin.Options{
		Addr: cfg.SMTPAddr, Domain: cfg.InboundHost, Handler: svc, VERP: verp, Routers: routers, Log: a.Log.With("component", "smtpin"),
		MaxBytes: int64(cfg.SMTPMaxBytes), MaxRecipients: cfg.SMTPMaxRecipients, Timeout: cfg.SMTPTimeout, TLS: smtpTLS,
		Caps: smtpCaps(cfg), DiskFull: a.disk.Full,
	}), nil
}

// Delivery is the node's delivery engine.
func (a *App) Delivery() *delivery.Service { return a.delivery.service }

// VERP signs and checks the node's return paths (tests write the
// addresses that reports go to with it).
func (a *App) VERP() *outbound.VERP { return a.delivery.verp }

// SMTPAddr is the address the inbound SMTP listener is bound to ("" when
// MAILROOM_SMTP_ADDR is empty or the node is not started).
func (a *App) SMTPAddr() string { return a.delivery.smtp.Addr() }

// deliverabilityWarnings logs, at start, what makes this node's mail look
// wrong to receivers (see delivery.CheckHeloName and README "Deliverability
// set-up"): an EHLO name that is not public or not this node's, a
// smarthost whose senders no SPF record authorises, and a public URL that
// is not https or not public. They are warnings, not
// start failures, so that `mailroom serve` still runs with no
// configuration.
func (a *App) deliverabilityWarnings() {
	cfg := a.Config
	var problems []string
	if cfg.Captures() {
		return // nothing leaves the node: no receiver judges it
	}
	if cfg.Outbound == "mx" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dns := dnsresolve.New(cfg.DNSResolver)
		problems = delivery.CheckHeloName(ctx, dns.LookupHost, cfg.HeloName, cfg.OutboundIPs, delivery.LocalAddrs())
	} else if len(cfg.SPFAuthorize) == 0 && len(cfg.OutboundIPs) == 0 {
		problems = append(problems, "MAILROOM_OUTBOUND is a smarthost but MAILROOM_SPF_AUTHORIZE is empty: sending domains' SPF records authorise only a:"+
			cfg.HeloName+"; set MAILROOM_SPF_AUTHORIZE to the smarthost's SPF terms (for example include:_spf.provider.example)")
	}
	problems = append(problems, delivery.CheckPublicURL(cfg.PublicURL)...)
	for _, p := range problems {
		a.Log.Error("deliverability: "+p, "component", "delivery")
	}
}
