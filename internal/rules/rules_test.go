package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/rules"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

var (
	locals   = []string{"ann", "bob", "o'hara", "zoë", "x%_y", "ann.smith"}
	domains  = []string{"acme.com", "mail.acme.com", "example.org", "b.io"}
	attrKeys = []string{"plan", "score", "city", `we"ird'; DROP TABLE contacts;--`, "a.b", "first_name"}
	attrVals = []string{"pro", "free", "10", "9", "-3.5", "1.5.2", "abc", "", "Ünï", "100", "2", ".5", "5.", "-"}
	tagPool  = []string{"vip", "trial", "o'brien", "beta"}
	statuses = []string{"subscribed", "unsubscribed", "pending", "cleaned"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func raw(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func randomRule(r *rand.Rand, now time.Time) rules.Rule {
	days := r.IntN(60)
	date := now.Add(-time.Duration(r.IntN(60*24)) * time.Hour).Format("2006-01-02")
	switch r.IntN(10) {
	case 0:
		op := pick(r, []string{"eq", "neq", "contains", "ends_with"})
		v := pick(r, locals) + "@" + pick(r, domains)
		if op == "contains" {
			v = pick(r, []string{"ann", "acme", "'", "%", "_"})
		} else if op == "ends_with" {
			v = "@" + pick(r, domains)
		}
		return rules.Rule{Field: "email", Op: op, Value: raw(v)}
	case 1:
		op := pick(r, []string{"eq", "neq", "in"})
		if op == "in" {
			return rules.Rule{Field: "email_domain", Op: op, Value: raw([]string{pick(r, domains), pick(r, domains)})}
		}
		return rules.Rule{Field: "email_domain", Op: op, Value: raw(pick(r, domains))}
	case 2, 3:
		op := pick(r, []string{"eq", "neq", "contains", "starts_with", "exists", "not_exists", "gt", "lt"})
		f := "attributes." + pick(r, attrKeys)
		if r.IntN(3) == 0 {
			f = pick(r, []string{"first_name", "last_name"}) // the contact's name, else the attribute
		}
		if op == "exists" || op == "not_exists" {
			return rules.Rule{Field: f, Op: op}
		}
		return rules.Rule{Field: f, Op: op, Value: raw(pick(r, attrVals))}
	case 4:
		return rules.Rule{Field: "tag", Op: pick(r, []string{"has", "not_has"}), Value: raw(pick(r, tagPool))}
	case 5:
		return rules.Rule{Field: "status", Op: pick(r, []string{"eq", "neq"}), Value: raw(pick(r, statuses))}
	case 6, 7:
		f := pick(r, []string{"joined_at", "created_at"})
		op := pick(r, []string{"before", "after", "within_days", "not_within_days"})
		if op == "before" || op == "after" {
			return rules.Rule{Field: f, Op: op, Value: raw(date)}
		}
		return rules.Rule{Field: f, Op: op, Value: raw(days)}
	case 8:
		return rules.Rule{Field: "suppressed", Op: "eq", Value: raw(r.IntN(2) == 0)}
	default:
		f := pick(r, []string{"opened", "clicked"})
		op := pick(r, []string{"within_days", "not_within_days", "never"})
		if op == "never" {
			return rules.Rule{Field: f, Op: op}
		}
		return rules.Rule{Field: f, Op: op, Value: raw(days)}
	}
}

// TestSQLAndGoAgree builds random people and random rule sets and holds the
// SQL the set compiles to (run by the contacts area's selection, on this
// test's dialect) to the Go evaluator, row for row.
func TestSQLAndGoAgree(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	r := rand.New(rand.NewPCG(1, 2))
	const ws, aud = "ws_rules", "aud_rules"
	if _, err := db.Exec(ctx, `INSERT INTO audiences (id, workspace_id, name, created_at, updated_at) VALUES (?, ?, 'A', 1, 1)`, aud, ws); err != nil {
		t.Fatal(err)
	}
	people := map[string]rules.Person{}
	seen := map[string]bool{}
	for i := range 300 {
		email := pick(r, locals) + fmt.Sprint(r.IntN(20)) + "@" + pick(r, domains)
		if seen[email] {
			continue
		}
		seen[email] = true
		attrs := map[string]string{}
		for _, k := range attrKeys {
			if r.IntN(2) == 0 {
				attrs[k] = pick(r, attrVals)
			}
		}
		mattrs := map[string]string{}
		for _, k := range attrKeys {
			if r.IntN(4) == 0 {
				mattrs[k] = pick(r, attrVals)
			}
		}
		merged := map[string]string{}
		maps.Copy(merged, attrs)
		maps.Copy(merged, mattrs)
		var tags []string
		for _, tg := range tagPool {
			if r.IntN(3) == 0 {
				tags = append(tags, tg)
			}
		}
		slices.Sort(tags)
		created := now.Add(-time.Duration(r.IntN(90*24*60)) * time.Minute)
		joined := now.Add(-time.Duration(r.IntN(90*24*60)) * time.Minute)
		st := pick(r, statuses)
		sup := r.IntN(5) == 0
		id := fmt.Sprintf("ct_%04d", i)
		aj, _ := json.Marshal(attrs)
		tj, _ := json.Marshal(append([]string{}, tags...))
		first, last := pick(r, attrVals), pick(r, attrVals)
		if _, err := db.Exec(ctx, `INSERT INTO contacts (id, workspace_id, email, first_name, last_name, attributes, tags, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, ws, email, first, last, string(aj), string(tj), created.UnixMilli(), created.UnixMilli()); err != nil {
			t.Fatal(err)
		}
		mj, _ := json.Marshal(mattrs)
		if _, err := db.Exec(ctx, `INSERT INTO memberships (id, workspace_id, audience_id, contact_id, status, attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			"mem_"+id, ws, aud, id, st, string(mj), joined.UnixMilli(), joined.UnixMilli()); err != nil {
			t.Fatal(err)
		}
		if sup {
			owner := ws
			if r.IntN(2) == 0 {
				owner = "" // a global row counts too
			}
			if _, err := db.Exec(ctx, `INSERT INTO suppressions (id, workspace_id, email, reason, created_at) VALUES (?, ?, ?, 'manual', 1)`, "sup_"+id, owner, email); err != nil {
				t.Fatal(err)
			}
		}
		people[id] = rules.Person{Email: email, FirstName: first, LastName: last, Attributes: merged, Tags: tags, CreatedAt: created, Status: st, JoinedAt: joined.Truncate(time.Millisecond), Suppressed: sup}
	}
	svc := contacts.New(db, clk)
	checked := 0
	for round := range 300 {
		n := 1 + r.IntN(5)
		var rs []rules.Rule
		for range n {
			rs = append(rs, randomRule(r, now))
		}
		mode := pick(r, []string{"all", "any"})
		set, err := rules.Parse(mode, rs, true)
		if err != nil {
			t.Fatalf("round %d: %v (%+v)", round, err, rs)
		}
		var want []string
		for id, p := range people {
			if set.Match(p, now) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		got := []string{}
		sel := svc.People(ws).WithAudience(aud).WithRules(set)
		ps, err := sel.List(ctx)
		if err != nil {
			t.Fatalf("round %d: %v\nrules: %s", round, err, set.JSON())
		}
		for _, p := range ps {
			got = append(got, p.ContactID)
		}
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (%s %s): SQL kept %d, Go %d\nSQL only: %v\nGo only: %v", round, mode, set.JSON(), len(got), len(want), diff(got, want), diff(want, got))
		}
		cnt, err := sel.Count(ctx)
		if err != nil || cnt != len(want) {
			t.Fatalf("round %d: count %d, %v; want %d", round, cnt, err, len(want))
		}
		checked += len(want)
	}
	if checked == 0 {
		t.Fatal("no rule set matched anybody: the test data is too thin")
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

func TestParseRefusals(t *testing.T) {
	many := make([]rules.Rule, 21)
	for i := range many {
		many[i] = rules.Rule{Field: "tag", Op: "has", Value: raw("x")}
	}
	cases := []struct {
		name, match, rules string
		audience           bool
		want               string
	}{
		{"unknown field", "", `[{"field":"nope","op":"eq","value":"x"}]`, false, "rules[0]: unknown field"},
		{"unknown op", "", `[{"field":"email","op":"like","value":"x"}]`, false, "rules[0]: email does not take op"},
		{"nested", "", `[{"field":"tag","op":"has","value":"a"},{"any":[{"field":"tag","op":"has","value":"b"}]}]`, false, "rules[1]"},
		{"wrong type", "", `[{"field":"created_at","op":"within_days","value":"ten"}]`, false, "rules[0]: within_days takes a whole number"},
		{"bool wanted", "", `[{"field":"suppressed","op":"eq","value":"yes"}]`, false, "rules[0]: suppressed eq takes true or false"},
		{"status needs audience", "", `[{"field":"status","op":"eq","value":"subscribed"}]`, false, "need the segment's audience_id"},
		{"bad status", "", `[{"field":"status","op":"eq","value":"gone"}]`, true, "is not one of"},
		{"value for exists", "", `[{"field":"attributes.x","op":"exists","value":"1"}]`, false, "takes no value"},
		{"missing value", "", `[{"field":"tag","op":"has"}]`, false, "needs a value"},
		{"bad date", "", `[{"field":"created_at","op":"before","value":"yesterday"}]`, false, "is not a date"},
		{"bad match", "most", `[]`, false, "match must be"},
		{"not array", "", `{"field":"tag"}`, false, "must be an array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rules.ParseJSON(c.match, []byte(c.rules), c.audience)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := rules.Parse("", many, false); err == nil || !strings.Contains(err.Error(), "at most 20") {
		t.Fatalf("21 rules: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	set, err := rules.ParseJSON("all", []byte(`[{"field":"email","op":"ends_with","value":"@acme.com"},{"field":"tag","op":"has","value":"VIP"},{"field":"opened","op":"within_days","value":30}]`), false)
	if err != nil {
		t.Fatal(err)
	}
	want := `Contacts whose email ends with "@acme.com", who have the tag "vip" and who opened an email in the last 30 days.`
	if got := set.Describe(false); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	set, _ = rules.ParseJSON("any", []byte(`[{"field":"status","op":"eq","value":"subscribed"},{"field":"attributes.plan","op":"eq","value":"pro"}]`), true)
	want = `Members of the audience matching any of: whose status is subscribed or whose attribute "plan" is "pro".`
	if got := set.Describe(true); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func FuzzParseJSON(f *testing.F) {
	f.Add("all", `[{"field":"attributes.plan","op":"gt","value":"10"}]`)
	f.Add("any", `[{"field":"email_domain","op":"in","value":["a.com"]}]`)
	f.Fuzz(func(t *testing.T, match, js string) {
		set, err := rules.ParseJSON(match, []byte(js), true)
		if err != nil {
			return
		}
		_ = set.Describe(true)
		_ = set.Match(rules.Person{Attributes: map[string]string{"plan": "5"}}, time.Now())
	})
}
