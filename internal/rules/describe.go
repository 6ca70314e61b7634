package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe is one English sentence saying who the set keeps, for the
// segment's describes field. inAudience names the scope: "members of the
// audience" or "contacts".
func (s *Set) Describe(inAudience bool) string {
	who := "Contacts"
	if inAudience {
		who = "Members of the audience"
	}
	if len(s.preds) == 0 {
		if inAudience {
			return "Every member of the audience."
		}
		return "Every contact of the workspace."
	}
	parts := make([]string, 0, len(s.preds))
	for _, p := range s.preds {
		parts = append(parts, p.describe())
	}
	if len(parts) == 1 {
		return who + " " + parts[0] + "."
	}
	if s.Mode == Any {
		return who + " matching any of: " + joinWords(parts, "or") + "."
	}
	return who + " " + joinWords(parts, "and") + "."
}

func q(s string) string { return strconv.Quote(s) }

func days(n float64) string {
	if n == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%d days", int64(n))
}

func (p pred) describe() string {
	switch p.kind {
	case kEmail:
		return "whose email " + textWords(p.op, p.str)
	case kDomain:
		switch p.op {
		case "in":
			qs := make([]string, len(p.strs))
			for i, d := range p.strs {
				qs[i] = q(d)
			}
			return "whose email domain is one of " + strings.Join(qs, ", ")
		case "neq":
			return "whose email domain is not " + q(p.str)
		}
		return "whose email domain is " + q(p.str)
	case kAttr:
		name := "attribute " + q(p.attr)
		if p.name {
			name = strings.ReplaceAll(p.attr, "_", " ")
		}
		switch p.op {
		case "exists":
			return "who have the " + name
		case "not_exists":
			return "who do not have the " + name
		case "gt":
			return "whose " + name + " is greater than " + q(p.str)
		case "lt":
			return "whose " + name + " is less than " + q(p.str)
		}
		return "whose " + name + " " + textWords(p.op, p.str)
	case kTag:
		if p.op == "not_has" {
			return "who do not have the tag " + q(p.str)
		}
		return "who have the tag " + q(p.str)
	case kTopic:
		if p.op == "not_subscribed" {
			return "who are not subscribed to the topic " + q(p.str)
		}
		return "who are subscribed to the topic " + q(p.str)
	case kStatus:
		if p.op == "neq" {
			return "whose status is not " + p.str
		}
		return "whose status is " + p.str
	case kJoined:
		return "who joined " + timeWords(p)
	case kCreated:
		return "who were created " + timeWords(p)
	case kOpened, kClicked:
		verb := "opened"
		if p.kind == kClicked {
			verb = "clicked"
		}
		switch p.op {
		case "never":
			return "who never " + verb + " an email"
		case "within_days":
			return "who " + verb + " an email in the last " + days(p.num)
		}
		return "who have not " + verb + " an email in the last " + days(p.num)
	case kSuppressed:
		if p.flag {
			return "whose address is suppressed"
		}
		return "whose address is not suppressed"
	}
	return ""
}

func textWords(op, v string) string {
	switch op {
	case "eq":
		return "is " + q(v)
	case "neq":
		return "is not " + q(v)
	case "contains":
		return "contains " + q(v)
	case "starts_with":
		return "starts with " + q(v)
	}
	return "ends with " + q(v)
}

func timeWords(p pred) string {
	at := time.UnixMilli(p.at).UTC()
	stamp := at.Format(time.RFC3339)
	if at.Hour() == 0 && at.Minute() == 0 && at.Second() == 0 {
		stamp = at.Format("2006-01-02")
	}
	switch p.op {
	case "before":
		return "before " + stamp
	case "after":
		return "after " + stamp
	case "within_days":
		return "in the last " + days(p.num)
	}
	return "more than " + days(p.num) + " ago"
}
