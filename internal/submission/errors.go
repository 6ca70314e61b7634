package submission

import (
	"fmt"
	"strings"

	"github.com/emersion/go-smtp"

	"mailroom/internal/apierr"
	"mailroom/internal/msglimit"
	"mailroom/internal/store"
)

// Replies of the submission's own making.
var (
	errNoTo = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 5, 2},
		Message: "missing_to: no To address of the message is an RCPT; a message needs at least one To recipient (blind copies are the other RCPTs)"}
	errBadTags = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0},
		Message: "invalid_request: X-Mailroom-Tags must be key=value pairs separated by commas"}
	errAuthRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0},
		Message: "Authentication required: AUTH with an API key (mail:send) as the password"}
	errTLSRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0},
		Message: "Must issue a STARTTLS command first"}
	errBadCredentials = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8},
		Message: "Authentication failed: the password must be an API key of this installation with the mail:send scope"}
	// errStorageFull is Postfix's answer on a low disk (RFC 3463 X.3.1).
	errStorageFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage"}
	errTempFailure = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "Temporary failure; nothing was accepted, try again"}
)

func errBadMessage(why string) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "invalid_message: " + why}
}

// limitReply answers a message past msglimit's limits with the limit's
// code (552 5.3.4 or 554 5.6.0) and the submission's invalid_message text.
func limitReply(e *msglimit.Error) *smtp.SMTPError {
	return &smtp.SMTPError{Code: e.Code, EnhancedCode: smtp.EnhancedCode(e.Enhanced), Message: "invalid_message: " + e.Text}
}

// replyOf maps the sending service's errors onto SMTP replies, in one
// place: auth and policy refusals are 5.7.x, rate limits and quotas 4.x.x
// (the client may try later), bad input 5.x.x. The reply text starts with
// the spec's error code, so a client's log names the same cause an HTTP
// caller would read. An error without a code is a fault of ours: 451.
func replyOf(err error) *smtp.SMTPError {
	if se, ok := err.(*smtp.SMTPError); ok {
		return se
	}
	e, ok := apierr.As(err)
	if (ok && e.Code == "storage_full") || store.IsDiskFull(err) {
		return errStorageFull
	}
	if !ok || e.Status >= 500 {
		return errTempFailure
	}
	msg := e.Code + ": " + oneLine(e.Message)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %d s)", e.RetryAfter)
	}
	switch {
	case e.Status == 429 || e.RetryAfter > 0 || e.Status == apierr.StatusPaymentRequired:
		return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: msg}
	case e.Status == apierr.StatusUnauthorized || e.Status == apierr.StatusForbidden:
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: msg}
	case e.Status == apierr.StatusRequestEntityTooLarge:
		return &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: msg}
	case e.Status == apierr.StatusConflict:
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: msg}
	case strings.Contains(e.Code, "sandbox") || strings.Contains(e.Code, "suppress") || strings.Contains(e.Code, "locked"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: msg}
	case strings.Contains(e.Code, "recipient") || e.Code == "missing_to":
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: msg}
	case strings.Contains(e.Code, "from") || strings.Contains(e.Code, "domain"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: msg}
	}
	return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: msg}
}

// oneLine keeps a reply on one line (a message never carries CR or LF).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
