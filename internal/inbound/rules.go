package inbound

import (
	"strings"

	"mailroom/internal/apierr"
)

// Rule actions (CONTRACT-WAVE2 "Rule").
const (
	ActionDrop     = "drop"      // not stored; email.filtered instead of email.received
	ActionArchive  = "archive"   // stored archived
	ActionMarkRead = "mark_read" // stored read
)

// MaxRules bounds a mailbox's rules.
const MaxRules = 100

// Rule is one mailbox rule: every given match field must match; the first
// matching rule of the list wins.
type Rule struct {
	Match  RuleMatch `json:"match"`
	Action string    `json:"action"`
}

// RuleMatch is what a rule compares. from and to are an exact address or
// "@domain"; subject is a case-insensitive substring. A rule with no
// field matches every message.
type RuleMatch struct {
	From    *string `json:"from,omitempty"`
	To      *string `json:"to,omitempty"`
	Subject *string `json:"subject,omitempty"`
}

// ValidateRules checks a rule list as PUT /v1/identity/rules receives it.
func ValidateRules(rules []Rule) error {
	if len(rules) > MaxRules {
		return apierr.InvalidRequest("rules holds %d rules; at most %d are allowed.", len(rules), MaxRules)
	}
	for i, r := range rules {
		switch r.Action {
		case ActionDrop, ActionArchive, ActionMarkRead:
		case "":
			return apierr.InvalidRequest("rules[%d].action is required: drop, archive or mark_read.", i)
		default:
			return apierr.InvalidRequest("rules[%d].action %q is not one of drop, archive, mark_read.", i, r.Action)
		}
		for field, v := range map[string]*string{"from": r.Match.From, "to": r.Match.To} {
			if v == nil {
				continue
			}
			s := strings.TrimSpace(*v)
			at := strings.LastIndexByte(s, '@')
			if at < 0 || at == len(s)-1 || strings.ContainsAny(s, " <>\r\n") || strings.Count(s, "@") > 1 {
				return apierr.InvalidRequest("rules[%d].match.%s must be an address or @domain.", i, field)
			}
		}
		if r.Match.Subject != nil && (*r.Match.Subject == "" || len(*r.Match.Subject) > 998) {
			return apierr.InvalidRequest("rules[%d].match.subject must be 1 to 998 characters.", i)
		}
	}
	return nil
}

func (r Rule) normalized() Rule {
	low := func(p *string) *string {
		if p == nil {
			return nil
		}
		s := strings.ToLower(strings.TrimSpace(*p))
		return &s
	}
	r.Match.From, r.Match.To = low(r.Match.From), low(r.Match.To)
	return r
}

// matchAddress: an exact address, or "@domain" for any address there.
func matchAddress(pattern string, addrs ...string) bool {
	pattern = strings.ToLower(pattern)
	for _, a := range addrs {
		a = strings.ToLower(a)
		if strings.HasPrefix(pattern, "@") {
			if strings.HasSuffix(a, pattern) {
				return true
			}
		} else if a == pattern {
			return true
		}
	}
	return false
}

// firstMatch returns the action of the first rule m matches, or "".
func firstMatch(rules []Rule, from string, to []string, subject string) string {
	for _, r := range rules {
		if r.Match.From != nil && !matchAddress(*r.Match.From, from) {
			continue
		}
		if r.Match.To != nil && !matchAddress(*r.Match.To, to...) {
			continue
		}
		if r.Match.Subject != nil && !strings.Contains(strings.ToLower(subject), strings.ToLower(*r.Match.Subject)) {
			continue
		}
		return r.Action
	}
	return ""
}
