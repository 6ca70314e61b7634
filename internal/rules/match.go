package rules

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Person is what the Go evaluator reads of one contact (and membership,
// within an audience).
type Person struct {
	Email      string // normalized (lowercase)
	FirstName  string
	LastName   string
	Attributes map[string]string
	Tags       []string // lowercase
	CreatedAt  time.Time
	Status     string    // membership status
	JoinedAt   time.Time // membership created
	Suppressed bool
	// LastOpened and LastClicked are the last human open and click, nil
	// when none.
	LastOpened, LastClicked *time.Time
	// OptedOut lists the topics (keys or ids) the person switched off.
	OptedOut []string
}

// Match evaluates the set for one person, as SQL would for the same row.
func (s *Set) Match(p Person, now time.Time) bool {
	if len(s.preds) == 0 {
		return true
	}
	anyMode := s.Mode == Any
	for _, pr := range s.preds {
		ok := pr.match(p, now.UnixMilli())
		if anyMode && ok {
			return true
		}
		if !anyMode && !ok {
			return false
		}
	}
	return !anyMode
}

func (p pred) match(x Person, now int64) bool {
	switch p.kind {
	case kEmail:
		return textMatch(x.Email, p.op, p.str)
	case kDomain:
		switch p.op {
		case "in":
			for _, d := range p.strs {
				if hasSuffix(x.Email, "@"+d) {
					return true
				}
			}
			return false
		case "neq":
			return !hasSuffix(x.Email, "@"+p.str)
		default:
			return hasSuffix(x.Email, "@"+p.str)
		}
	case kAttr:
		v, ok := x.Attributes[p.attr]
		if n := map[string]string{"first_name": x.FirstName, "last_name": x.LastName}[p.attr]; p.name && n != "" {
			v, ok = n, true
		}
		switch p.op {
		case "exists":
			return ok
		case "not_exists":
			return !ok
		case "neq":
			return !ok || v != p.str
		case "gt", "lt":
			if !ok {
				return false
			}
			c := strings.Compare(v, p.str)
			if p.isNum {
				if a, isNum := decimal(v); isNum {
					b, _ := decimal(p.str)
					c = cmpFloat(a, b)
				}
			}
			if p.op == "gt" {
				return c > 0
			}
			return c < 0
		default:
			return ok && textMatch(v, p.op, p.str)
		}
	case kTag:
		has := slices.Contains(x.Tags, p.str)
		if p.op == "not_has" {
			return !has
		}
		return has
	case kTopic:
		out := slices.Contains(x.OptedOut, p.str)
		if p.op == "subscribed" {
			return !out
		}
		return out
	case kStatus:
		if p.op == "neq" {
			return x.Status != p.str
		}
		return x.Status == p.str
	case kJoined:
		return timeMatch(x.JoinedAt.UnixMilli(), p, now)
	case kCreated:
		return timeMatch(x.CreatedAt.UnixMilli(), p, now)
	case kOpened, kClicked:
		last := x.LastOpened
		if p.kind == kClicked {
			last = x.LastClicked
		}
		switch p.op {
		case "never":
			return last == nil
		case "within_days":
			return last != nil && last.UnixMilli() >= now-int64(p.num)*day
		default:
			return last == nil || last.UnixMilli() < now-int64(p.num)*day
		}
	case kSuppressed:
		return x.Suppressed == p.flag
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func textMatch(x, op, v string) bool {
	switch op {
	case "eq":
		return x == v
	case "neq":
		return x != v
	case "contains":
		return strings.Contains(x, v)
	case "starts_with":
		return strings.HasPrefix(x, v)
	case "ends_with":
		return hasSuffix(x, v)
	}
	return false
}

// hasSuffix is strings.HasSuffix on whole characters, as SQL's substr
// and length count them (the same for valid UTF-8).
func hasSuffix(x, v string) bool {
	if !utf8.ValidString(x) || !utf8.ValidString(v) {
		return false
	}
	return strings.HasSuffix(x, v)
}

func timeMatch(at int64, p pred, now int64) bool {
	switch p.op {
	case "before":
		return at < p.at
	case "after":
		return at > p.at
	case "within_days":
		return at >= now-int64(p.num)*day
	default:
		return at < now-int64(p.num)*day
	}
}
