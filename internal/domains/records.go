package domains

import "strings"

// Record kinds, as the spec names them in records[].record.
const (
	RecordMX        = "MX"
	RecordDKIM      = "DKIM"
	RecordSPF       = "SPF"
	RecordDMARC     = "DMARC"
	RecordOwnership = "OWNERSHIP"
)

// Record statuses: pending until seen, verified once seen as published,
// failed when something is published at the name but with the wrong value.
const (
	StatusPending  = "pending"
	StatusVerified = "verified"
	StatusFailed   = "failed"
)

// DKIMSelectors returns the three selectors every domain publishes; having
// three lets keys rotate without a window in which signatures fail to verify.
func DKIMSelectors() [3]string { return [3]string{"mr1", "mr2", "mr3"} }

// Record is one DNS record a domain owner must publish.
type Record struct {
	Record   string `json:"record"` // MX, DKIM, SPF, DMARC or OWNERSHIP
	Type     string `json:"type"`   // TXT, MX or CNAME
	Name     string `json:"name"`   // fully qualified, without trailing dot
	Value    string `json:"value"`  // exactly what to publish
	Priority *int   `json:"priority,omitempty"`
	Status   string `json:"status"`
	// Required: the domain verifies (and stays verified) only with it
	// found; the receiving MX alone is optional (CONTRACT-WAVE2).
	Required bool `json:"required"`
	// Detail says why a record failed or what to know about it (an SPF
	// evaluation result, a DMARC note); empty when there is nothing to say.
	Detail string `json:"detail,omitempty"`
}

// RecordConfig is the installation-wide part of every domain's records.
type RecordConfig struct {
	InboundHost string // host name domains point their MX at
	SPFInclude  string // SPF mechanisms authorising our senders, e.g. "ip4:192.0.2.1" or "a:mx.example"
	// DMARCRua is the aggregate-report address the suggested DMARC record
	// names (rua=mailto:...); empty: none.
	DMARCRua string
}

// KeySet is one DKIM selector and the TXT value publishing its public key.
type KeySet struct {
	Selector    string
	PublicValue string // as made by DKIMRecordValue
}

// BounceSubdomain names the subdomain of each custom domain that its
// mail's Return-Path uses (bounces+<email id>-<tag>@send.<domain>): it has its
// own MX (to us) and SPF, so the domain's own inbound mail stays where it
// is, and under relaxed DMARC it aligns with the From domain.
const BounceSubdomain = "send"

// BounceDomain is the Return-Path domain of mail from domain.
func BounceDomain(domain string) string { return BounceSubdomain + "." + domain }

// BuildRecords lists, in a stable order, everything domain must publish:
// the receiving MX (optional: mailboxes need it, sending does not), the
// bounce subdomain's MX and SPF, one DKIM record per key set, DMARC and
// the ownership token. domain must already be normalized. Every status
// starts pending.
func BuildRecords(domain string, cfg RecordConfig, dkim []KeySet, ownershipToken string) []Record {
	prio := 10
	bounces := BounceDomain(domain)
	recs := []Record{
		{Record: RecordMX, Type: "MX", Name: domain, Value: cfg.InboundHost, Priority: &prio},
		{Record: RecordMX, Type: "MX", Name: bounces, Value: cfg.InboundHost, Priority: &prio, Required: true},
	}
	for _, k := range dkim {
		recs = append(recs, Record{Record: RecordDKIM, Type: "TXT", Name: k.Selector + "._domainkey." + domain, Value: k.PublicValue, Required: true})
	}
	recs = append(recs,
		Record{Record: RecordSPF, Type: "TXT", Name: bounces, Value: "v=spf1 " + cfg.SPFInclude + " ~all", Required: true},
		Record{Record: RecordDMARC, Type: "TXT", Name: "_dmarc." + domain, Value: dmarcValue(cfg.DMARCRua), Required: true},
		Record{Record: RecordOwnership, Type: "TXT", Name: "_mailroom." + domain, Value: OwnershipPrefix + ownershipToken, Required: true},
	)
	for i := range recs {
		recs[i].Status = StatusPending
	}
	return recs
}

// OwnershipPrefix starts the ownership TXT value.
const OwnershipPrefix = "mailroom-verification="

func dmarcValue(rua string) string {
	if rua == "" {
		return "v=DMARC1; p=none;"
	}
	if !strings.HasPrefix(strings.ToLower(rua), "mailto:") {
		rua = "mailto:" + rua
	}
	return "v=DMARC1; p=none; rua=" + rua + ";"
}
