// Package rules is the one evaluator of segment rules (CONTRACT-WAVE2
// "Segment rules"): a list of { field, op, value } tests joined by all or
// any, never nested. Segments use it to list and count their members,
// automations' if step to test one contact. A rule set is parsed and
// checked once (Parse), then either compiled to a SQL condition that both
// dialects run, every value a bound parameter (SQL), or evaluated in Go
// for one person (Match). The two are held to the same answers on random
// data by rules_test.go, on SQLite and PostgreSQL.
package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
)

// MaxRules is the most rules one set holds (spec "Limits").
const MaxRules = 20

// Match modes.
const (
	All = "all"
	Any = "any"
)

// Rule is one test as the API carries it. Value is the raw JSON value (nil
// when absent).
type Rule struct {
	Field string          `json:"field"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Set is a parsed, checked rule set; build it with Parse.
type Set struct {
	Mode  string // all or any
	Rules []Rule
	preds []pred
}

// kind is what a field is about, which decides its ops and its SQL.
type kind int

const (
	kEmail kind = iota
	kDomain
	kAttr
	kTag
	kTopic
	kStatus
	kJoined
	kCreated
	kOpened
	kClicked
	kSuppressed
)

// pred is one checked rule: its field kind, op and typed value.
type pred struct {
	kind  kind
	attr  string // attributes.<name>, or first_name/last_name
	name  bool   // first_name/last_name: the contact's field, else the attribute
	op    string
	str   string
	strs  []string
	num   float64 // within_days, not_within_days
	isNum bool    // gt/lt value parses as a decimal
	at    int64   // before/after: unix ms
	flag  bool    // suppressed
}

var opsOf = map[kind][]string{
	kEmail:      {"eq", "neq", "contains", "ends_with"},
	kDomain:     {"eq", "neq", "in"},
	kAttr:       {"eq", "neq", "contains", "starts_with", "exists", "not_exists", "gt", "lt"},
	kTag:        {"has", "not_has"},
	kTopic:      {"subscribed", "not_subscribed"},
	kStatus:     {"eq", "neq"},
	kJoined:     {"before", "after", "within_days", "not_within_days"},
	kCreated:    {"before", "after", "within_days", "not_within_days"},
	kOpened:     {"within_days", "not_within_days", "never"},
	kClicked:    {"within_days", "not_within_days", "never"},
	kSuppressed: {"eq"},
}

var fields = map[string]kind{
	"email": kEmail, "email_domain": kDomain, "tag": kTag, "topic": kTopic, "status": kStatus,
	"joined_at": kJoined, "created_at": kCreated, "opened": kOpened, "clicked": kClicked, "suppressed": kSuppressed,
}

// Fields are the rule fields besides attributes.<name>, and Ops every op,
// as the OpenAPI document lists them.
var (
	Fields = []string{"email", "email_domain", "first_name", "last_name", "tag", "topic", "status", "joined_at", "created_at", "opened", "clicked", "suppressed"}
	Ops    = []string{"eq", "neq", "contains", "starts_with", "ends_with", "in", "gt", "lt", "exists", "not_exists", "has", "not_has",
		"subscribed", "not_subscribed", "before", "after", "within_days", "not_within_days", "never"}
)

// MembershipStatuses are the values a status rule may name.
var MembershipStatuses = []string{"subscribed", "unsubscribed", "pending", "cleaned"}

// MaxValueLen bounds a string value (an attribute value is at most 2048 bytes).
const MaxValueLen = 2048

func bad(i int, format string, a ...any) error {
	return apierr.InvalidRequest("rules[%d]: %s", i, fmt.Sprintf(format, a...)).
		WithNext("See the segment rule table: each rule is { field, op, value }.")
}

// Parse checks match and rules. withAudience says whether the set belongs
// to an audience (status and joined_at rules need one). Errors are 400
// invalid_request naming the rule's index.
func Parse(match string, rules []Rule, withAudience bool) (*Set, error) {
	switch match {
	case "":
		match = All
	case All, Any:
	default:
		return nil, apierr.InvalidRequest("match must be \"all\" or \"any\", not %q.", apierr.Clip(match, 40))
	}
	if len(rules) > MaxRules {
		return nil, apierr.InvalidRequest("A segment holds at most %d rules; %d were sent.", MaxRules, len(rules)).
			WithNext("Split the conditions across segments, or use email_domain with op in for lists of domains.")
	}
	s := &Set{Mode: match, Rules: make([]Rule, 0, len(rules)), preds: make([]pred, 0, len(rules))}
	for i, r := range rules {
		p, err := parseRule(i, r, withAudience)
		if err != nil {
			return nil, err
		}
		s.Rules = append(s.Rules, r)
		s.preds = append(s.preds, p)
	}
	return s, nil
}

// ParseJSON parses rules from their JSON form (an array of objects),
// refusing unknown keys and nesting.
func ParseJSON(match string, raw []byte, withAudience bool) (*Set, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, apierr.InvalidRequest("rules must be an array of { field, op, value } objects.")
	}
	rules := make([]Rule, 0, len(items))
	for i, it := range items {
		var r Rule
		dec := json.NewDecoder(bytes.NewReader(it))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			var probe map[string]json.RawMessage
			if json.Unmarshal(it, &probe) == nil {
				for k := range probe {
					if k != "field" && k != "op" && k != "value" {
						return nil, bad(i, "%q is not a rule key; rules are never nested and take only field, op and value.", apierr.Clip(k, 40))
					}
				}
			}
			return nil, bad(i, "a rule is an object { field, op, value } with string field and op.")
		}
		rules = append(rules, r)
	}
	return Parse(match, rules, withAudience)
}

// parseRule checks rule i in three steps: its field and op, whether it
// takes a value, and the value as its field and op read it.
func parseRule(i int, r Rule, withAudience bool) (pred, error) {
	p, err := parseFieldOp(i, r, withAudience)
	if err != nil {
		return p, err
	}
	noValue := r.Op == "exists" || r.Op == "not_exists" || r.Op == "never"
	has := len(r.Value) > 0 && string(r.Value) != "null"
	if noValue {
		if has {
			return p, bad(i, "op %s takes no value.", r.Op)
		}
		return p, nil
	}
	if !has {
		return p, bad(i, "op %s needs a value.", r.Op)
	}
	switch {
	case p.kind == kDomain && r.Op == "in":
		return parseDomains(i, r, p)
	case p.kind == kSuppressed:
		if json.Unmarshal(r.Value, &p.flag) != nil {
			return p, bad(i, "suppressed eq takes true or false.")
		}
	case r.Op == "within_days" || r.Op == "not_within_days":
		var n int64
		if json.Unmarshal(r.Value, &n) != nil || n < 0 || n > 36500 {
			return p, bad(i, "%s takes a whole number of days from 0 to 36500.", r.Op)
		}
		p.num = float64(n)
	case r.Op == "before" || r.Op == "after":
		return parseDate(i, r, p)
	default:
		return parseString(i, r, p)
	}
	return p, nil
}

// parseFieldOp reads the rule's field (a known one or attributes.<name>)
// and checks that it takes the op and, for a membership's fields, that
// the segment has an audience.
func parseFieldOp(i int, r Rule, withAudience bool) (pred, error) {
	var p pred
	if r.Field == "" {
		return p, bad(i, "field is required.")
	}
	if r.Op == "" {
		return p, bad(i, "op is required.")
	}
	k, ok := fields[r.Field]
	if name, isAttr := strings.CutPrefix(r.Field, "attributes."); isAttr {
		if name == "" || len(name) > 64 || strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return p, bad(i, "the attribute name in %q must have 1 to 64 characters and no control characters.", apierr.Clip(r.Field, 40))
		}
		k, ok, p.attr = kAttr, true, name
	}
	if r.Field == "first_name" || r.Field == "last_name" {
		k, ok, p.attr, p.name = kAttr, true, r.Field, true
	}
	if !ok {
		return p, bad(i, "unknown field %q; fields are email, email_domain, first_name, last_name, attributes.<name>, tag, topic, status, joined_at, created_at, opened, clicked, suppressed.", apierr.Clip(r.Field, 40))
	}
	p.kind, p.op = k, r.Op
	if !slices.Contains(opsOf[k], r.Op) {
		return p, bad(i, "%s does not take op %q; it takes %s.", r.Field, apierr.Clip(r.Op, 40), strings.Join(opsOf[k], ", "))
	}
	if (k == kStatus || k == kJoined) && !withAudience {
		return p, bad(i, "%s rules need the segment's audience_id; a workspace-wide segment has no membership to test.", r.Field)
	}
	return p, nil
}

// parseDomains reads email_domain in's array of domains.
func parseDomains(i int, r Rule, p pred) (pred, error) {
	var ds []string
	if json.Unmarshal(r.Value, &ds) != nil || len(ds) == 0 {
		return p, bad(i, "email_domain in takes a non-empty array of domains.")
	}
	if len(ds) > 100 {
		return p, bad(i, "email_domain in takes at most 100 domains.")
	}
	for _, d := range ds {
		d, err := domain(d)
		if err != nil {
			return p, bad(i, "%s", err)
		}
		p.strs = append(p.strs, d)
	}
	return p, nil
}

// parseDate reads before's and after's date: RFC 3339 or a day.
func parseDate(i int, r Rule, p pred) (pred, error) {
	var s string
	if json.Unmarshal(r.Value, &s) != nil {
		return p, bad(i, "%s takes a date: RFC 3339 (2025-01-31T09:00:00Z) or YYYY-MM-DD.", r.Op)
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t, err = time.Parse("2006-01-02", s)
	}
	if err != nil {
		return p, bad(i, "%q is not a date; write RFC 3339 (2025-01-31T09:00:00Z) or YYYY-MM-DD.", apierr.Clip(s, 40))
	}
	p.at = t.UnixMilli()
	return p, nil
}

// parseString reads a string value, normalized as its field is stored
// (addresses and tags lowercased, domains without @).
func parseString(i int, r Rule, p pred) (pred, error) {
	var s string
	if json.Unmarshal(r.Value, &s) != nil {
		return p, bad(i, "%s %s takes a string value.", r.Field, r.Op)
	}
	if len(s) > MaxValueLen {
		return p, bad(i, "the value is longer than %d bytes.", MaxValueLen)
	}
	switch p.kind {
	case kEmail, kTag:
		s = strings.ToLower(strings.TrimSpace(s)) // stored lowercased
	case kDomain:
		d, err := domain(s)
		if err != nil {
			return p, bad(i, "%s", err)
		}
		s = d
	case kStatus:
		if !slices.Contains(MembershipStatuses, s) {
			return p, bad(i, "status %q is not one of %s.", apierr.Clip(s, 40), strings.Join(MembershipStatuses, ", "))
		}
	case kTopic:
		if strings.TrimSpace(s) == "" {
			return p, bad(i, "topic needs a topic key or id.")
		}
	}
	if (p.kind == kEmail || p.kind == kTag) && s == "" && r.Op != "eq" && r.Op != "neq" {
		return p, bad(i, "the value is empty.")
	}
	p.str = s
	if r.Op == "gt" || r.Op == "lt" {
		_, p.isNum = decimal(s)
	}
	return p, nil
}

func domain(d string) (string, error) {
	d = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "@")))
	if d == "" || strings.ContainsAny(d, "@ \t\r\n") || len(d) > 253 {
		return "", fmt.Errorf("%q is not a domain (write example.com)", apierr.Clip(d, 40))
	}
	return d, nil
}

// decimal parses s when it is a decimal as the rules read one: an
// optional minus, digits, optionally a point and digits (store.IsDecimal
// is the same test in SQL).
func decimal(s string) (float64, bool) {
	u := strings.TrimPrefix(s, "-")
	if u == "" || u[0] == '.' || u[len(u)-1] == '.' || strings.Count(u, ".") > 1 {
		return 0, false
	}
	for _, c := range u {
		if (c < '0' || c > '9') && c != '.' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// NeedsAudience reports whether a rule set can only run within an audience.
func (s *Set) NeedsAudience() bool {
	for _, p := range s.preds {
		if p.kind == kStatus || p.kind == kJoined {
			return true
		}
	}
	return false
}

// JSON is the rules as stored and answered.
func (s *Set) JSON() []byte {
	b, _ := json.Marshal(s.Rules)
	return b
}
