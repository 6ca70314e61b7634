package bounce

import (
	"net/textproto"
	"strconv"
	"strings"
)

// DSN is a delivery status notification (RFC 3464).
type DSN struct {
	ReportingMTA       string // without the "dns;" type
	ArrivalDate        string // as written; RFC 5322 date-time
	OriginalEnvelopeID string
	Recipients         []DSNRecipient
	// OriginalHeaders are the header fields of the returned message (from
	// the message/rfc822 or text/rfc822-headers part), nil when absent.
	OriginalHeaders textproto.MIMEHeader
	// OriginalMessageID is the returned message's Message-ID as written,
	// angle brackets included.
	OriginalMessageID string
	HumanReadable     string // the first text/plain part, trimmed
}

// DSNRecipient is the per-recipient block of a DSN.
type DSNRecipient struct {
	FinalRecipient    string // address only; the "rfc822;" type is dropped
	OriginalRecipient string
	Action            string // failed, delayed, delivered, relayed, expanded (lower case)
	Status            string // RFC 3463 code, e.g. "5.1.1"
	DiagnosticType    string // e.g. "smtp"
	DiagnosticCode    string // the remote text without its type, e.g. "550 5.1.1 User unknown"
	RemoteMTA         string
	LastAttemptDate   string
}

// SMTPCode is the reply code at the start of DiagnosticCode, or 0.
func (r DSNRecipient) SMTPCode() int {
	if r.DiagnosticType != "" && r.DiagnosticType != "smtp" {
		return 0
	}
	f := strings.Fields(r.DiagnosticCode)
	if len(f) == 0 {
		return 0
	}
	c, err := strconv.Atoi(strings.TrimRight(f[0], "-"))
	if err != nil || c < 200 || c > 599 {
		return 0
	}
	return c
}

// Failed reports a permanent failure: Action failed, or a 5.x.x status.
func (r DSNRecipient) Failed() bool {
	return r.Action == "failed" || strings.HasPrefix(r.Status, "5.")
}

// ParseDSN reads a multipart/report; report-type=delivery-status message.
// It returns ErrNotReport for other messages, and an error when the report
// lacks its message/delivery-status part or names no recipient.
func ParseDSN(raw []byte) (*DSN, error) {
	rep, err := readReport(raw,
		[]string{"delivery-status", "global-delivery-status"},
		[]string{"message/delivery-status", "message/global-delivery-status"})
	if err != nil {
		return nil, err
	}
	d := &DSN{HumanReadable: rep.text, OriginalHeaders: rep.originalHeaders}
	if rep.originalHeaders != nil {
		d.OriginalMessageID = strings.TrimSpace(rep.originalHeaders.Get("Message-Id"))
	}
	blocks := fieldBlocks(rep.machine)
	for i, b := range blocks {
		// The per-message block comes first, but some MTAs omit it: a block
		// with Final-Recipient is a recipient wherever it is.
		if b.Get("Final-Recipient") == "" && b.Get("Original-Recipient") == "" {
			if i == 0 {
				_, d.ReportingMTA = typedValue(b.Get("Reporting-Mta"))
				d.ArrivalDate = strings.TrimSpace(b.Get("Arrival-Date"))
				d.OriginalEnvelopeID = strings.TrimSpace(b.Get("Original-Envelope-Id"))
			}
			continue
		}
		r := DSNRecipient{
			Action:          strings.ToLower(strings.TrimSpace(b.Get("Action"))),
			LastAttemptDate: strings.TrimSpace(b.Get("Last-Attempt-Date")),
		}
		_, r.FinalRecipient = typedValue(b.Get("Final-Recipient"))
		_, r.OriginalRecipient = typedValue(b.Get("Original-Recipient"))
		_, r.RemoteMTA = typedValue(b.Get("Remote-Mta"))
		r.DiagnosticType, r.DiagnosticCode = typedValue(b.Get("Diagnostic-Code"))
		r.DiagnosticCode = strings.Join(strings.Fields(r.DiagnosticCode), " ")
		// Status may carry a comment: "5.0.0 (permanent failure)".
		if f := strings.Fields(b.Get("Status")); len(f) > 0 {
			r.Status = f[0]
		}
		r.FinalRecipient = strings.Trim(r.FinalRecipient, "<>")
		r.OriginalRecipient = strings.Trim(r.OriginalRecipient, "<>")
		if r.FinalRecipient == "" {
			r.FinalRecipient = r.OriginalRecipient
		}
		d.Recipients = append(d.Recipients, r)
	}
	if len(d.Recipients) == 0 {
		return nil, errNoRecipients
	}
	return d, nil
}

var errNoRecipients = &parseError{"delivery-status names no recipient"}

type parseError struct{ msg string }

func (e *parseError) Error() string { return "bounce: " + e.msg }
