package bounce

import (
	"net/textproto"
	"strings"
)

// ARF is an abuse feedback report (RFC 5965), in practice a spam
// complaint relayed by a mailbox provider's feedback loop.
type ARF struct {
	FeedbackType     string // abuse, fraud, virus, other, not-spam, auth-failure (lower case)
	UserAgent        string
	Version          string
	OriginalMailFrom string   // address only, angle brackets dropped
	OriginalRcptTo   []string // address only; providers often redact it
	ArrivalDate      string   // as written
	ReportedDomain   []string
	SourceIP         string
	// OriginalHeaders are the header fields of the reported message, nil
	// when absent.
	OriginalHeaders textproto.MIMEHeader
	// OriginalMessageID is the reported message's Message-ID as written.
	OriginalMessageID string
	HumanReadable     string
}

// ParseARF reads a multipart/report; report-type=feedback-report message.
func ParseARF(raw []byte) (*ARF, error) {
	rep, err := readReport(raw, []string{"feedback-report"}, []string{"message/feedback-report"})
	if err != nil {
		return nil, err
	}
	a := &ARF{HumanReadable: rep.text, OriginalHeaders: rep.originalHeaders}
	if rep.originalHeaders != nil {
		a.OriginalMessageID = strings.TrimSpace(rep.originalHeaders.Get("Message-Id"))
	}
	f := textproto.MIMEHeader{}
	// One block by the RFC; some reporters put a blank line inside it.
	for _, b := range fieldBlocks(rep.machine) {
		for k, v := range b {
			f[k] = append(f[k], v...)
		}
	}
	a.FeedbackType = strings.ToLower(strings.TrimSpace(f.Get("Feedback-Type")))
	if a.FeedbackType == "" {
		return nil, &parseError{"feedback report has no Feedback-Type"}
	}
	a.UserAgent = strings.TrimSpace(f.Get("User-Agent"))
	a.Version = strings.TrimSpace(f.Get("Version"))
	a.OriginalMailFrom = strings.Trim(strings.TrimSpace(f.Get("Original-Mail-From")), "<>")
	for _, v := range f.Values("Original-Rcpt-To") {
		if v = strings.Trim(strings.TrimSpace(v), "<>"); v != "" {
			a.OriginalRcptTo = append(a.OriginalRcptTo, v)
		}
	}
	a.ArrivalDate = strings.TrimSpace(f.Get("Arrival-Date"))
	if a.ArrivalDate == "" {
		a.ArrivalDate = strings.TrimSpace(f.Get("Received-Date"))
	}
	for _, v := range f.Values("Reported-Domain") {
		if v = strings.TrimSpace(v); v != "" {
			a.ReportedDomain = append(a.ReportedDomain, v)
		}
	}
	a.SourceIP = strings.TrimSpace(f.Get("Source-Ip"))
	return a, nil
}
