package delivery

import (
	"strings"
	"testing"

	"mailroom/internal/outbound"
)

// TestCompactRecipients: the outcomes are compacted only when every
// recipient was delivered by an attempt of this transaction whose row
// rebuilds its outcome to the field.
func TestCompactRecipients(t *testing.T) {
	ok := outbound.RcptResult{OK: true, Code: 250, Enhanced: "2.0.0", Message: "2.0.0 OK: queued", Stage: outbound.StageData}
	long := ok
	long.Message = strings.Repeat("x", 301) // stored truncated: not rebuilt as it was
	rcpt := func(email string, attempts int, r outbound.RcptResult) Recipient {
		return Recipient{Email: email, Status: RcptDelivered, Code: r.Code, Enhanced: r.Enhanced, Message: r.Message, Attempts: attempts, Stage: r.Stage}
	}
	row := func(email string, attempt int, r outbound.RcptResult) attemptRow {
		return attemptRow{Recipient: email, Attempt: attempt, Outcome: RcptDelivered, Result: r}
	}
	bounced := rcpt("b@example.net", 1, ok)
	bounced.Status = RcptBounced
	for _, tc := range []struct {
		name  string
		rcpts []Recipient
		tried []attemptRow
		want  string
	}{
		{"delivered", []Recipient{rcpt("a@example.net", 1, ok), rcpt("b@example.net", 2, ok)},
			[]attemptRow{row("a@example.net", 1, ok), row("b@example.net", 2, ok)}, `["=","a@example.net","b@example.net"]`},
		{"one delivered earlier", []Recipient{rcpt("a@example.net", 1, ok), rcpt("b@example.net", 1, ok)},
			[]attemptRow{row("b@example.net", 1, ok)}, ""},
		{"another attempt", []Recipient{rcpt("a@example.net", 2, ok)}, []attemptRow{row("a@example.net", 1, ok)}, ""},
		{"reply truncated", []Recipient{rcpt("a@example.net", 1, long)}, []attemptRow{row("a@example.net", 1, long)}, ""},
		{"bounced", []Recipient{bounced}, []attemptRow{row("b@example.net", 1, ok)}, ""},
		{"none", nil, nil, ""},
	} {
		got, _ := compactRecipients(tc.rcpts, tc.tried, nil)
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
