package delivery

import (
	"context"
	"encoding/json"

	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// deliveredMark heads an emails.recipients array whose outcomes are not
// stored there: ["=", address...] says that every address was delivered and
// that its outcome (code, reply, stage, attempts) is its last row in
// email_attempts, written in the same transaction. A delivered broadcast
// recipient then stores its address, not the ~120 bytes of an outcome that
// repeats its attempt row (issue #47). compactRecipients writes it only when
// the rebuild (outcomesOf) gives back the outcomes exactly. When the
// addresses are the email's To as written, the array is the mark alone
// (sending.DeliveredTo), which the sending area's reads give back whole.
const deliveredMark = "="

// compactRecipients is the stored form of rcpts when they can be rebuilt
// from the attempts tried in this transaction: all delivered, each by one of
// tried whose row rebuilds it to the field. ok is false otherwise (the
// outcomes are then stored whole).
func compactRecipients(rcpts []Recipient, tried []attemptRow, to []string) (string, bool) {
	if len(rcpts) == 0 {
		return "", false
	}
	out := make([]string, 0, len(rcpts)+1)
	out = append(out, deliveredMark)
	for _, r := range rcpts {
		if r.Status != RcptDelivered || r.temporary {
			return "", false
		}
		found := false
		for _, t := range tried {
			if t.Recipient == r.Email && t.Attempt == r.Attempts {
				res := t.Result
				found = outcomeOf(t.Recipient, t.Attempt, t.Outcome, res.Stage, res.Code, res.Enhanced, truncateReply(res.Message)) == r
				break
			}
		}
		if !found {
			return "", false
		}
		out = append(out, r.Email)
	}
	if sending.IsDeliveredTo(out[1:], to) {
		return sending.DeliveredTo, true
	}
	b, err := json.Marshal(out)
	return string(b), err == nil
}

// outcomeOf is a recipient's outcome as its attempt row keeps it.
func outcomeOf(rcpt string, attempt int, outcome, stage string, code int, enhanced, reply string) Recipient {
	return Recipient{Email: rcpt, Status: outcome, Code: code, Enhanced: enhanced, Message: reply, Attempts: attempt, Stage: stage}
}

// deliveredAddresses is the addresses of a compacted recipients array
// (compactRecipients), or nil when raw is not one.
func deliveredAddresses(raw string) []string {
	if len(raw) < 4 || raw[:4] != `["="` {
		return nil
	}
	var l []string
	if err := json.Unmarshal([]byte(raw), &l); err != nil || len(l) < 2 || l[0] != deliveredMark {
		return nil
	}
	return l[1:]
}

// decodeRecipients decodes a stored recipients array, rebuilding a
// compacted one through q.
func decodeRecipients(ctx context.Context, q store.Querier, id, raw string) ([]Recipient, error) {
	if addrs := deliveredAddresses(raw); addrs != nil {
		return outcomesOf(ctx, q, id, addrs)
	}
	var rcpts []Recipient
	if raw == "" {
		return nil, nil
	}
	err := json.Unmarshal([]byte(raw), &rcpts)
	return rcpts, err
}
