package contacts_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/rules"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/topics"
)

// peopleBundle is a small workspace written through its owners' services:
// audience A with six members, a deleted audience, a contact in no
// audience, suppressions (own and global), topic choices, and a second
// workspace with the same address.
type peopleBundle struct {
	db             *store.DB
	svc            *contacts.Service
	ws, audience   string
	news, optional topics.Topic // news is on by default, optional off
	old            topics.Topic // archived after dan switched it off
	ids            map[string]string
}

func newPeopleBundle(t *testing.T) peopleBundle {
	t.Helper()
	ctx := context.Background()
	db := testdb.Open(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	b := peopleBundle{db: db, svc: contacts.New(db, clk), ws: "ws_people", ids: map[string]string{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a, err := b.svc.CreateAudience(ctx, b.ws, "A", "")
	must(err)
	b.audience = a.ID
	sub, unsub := contacts.StatusSubscribed, contacts.StatusUnsubscribed
	rows := []contacts.ImportRow{
		{Email: "ann@x.test", Status: sub, Tags: []string{"vip"}},
		{Email: "bob@x.test", Status: sub}, // suppressed by the workspace
		{Email: "cat@x.test", Status: unsub},
		{Email: "dan@x.test", Status: sub}, // switched news off
		{Email: "eve@x.test", Status: sub}, // suppressed globally
		{Email: "fay@x.test", Status: sub}, // switched optional on
	}
	for i := range rows {
		rows[i].Row = i + 1
	}
	_, err = b.svc.Import(ctx, b.ws, a.ID, rows, false)
	must(err)
	gone, err := b.svc.CreateAudience(ctx, b.ws, "Gone", "")
	must(err)
	_, err = b.svc.Import(ctx, b.ws, gone.ID, []contacts.ImportRow{{Row: 1, Email: "hal@x.test", Status: sub}}, false)
	must(err)
	must(b.svc.DeleteAudience(ctx, b.ws, gone.ID))
	_, err = b.svc.Create(ctx, b.ws, contacts.NewContact{Email: "gus@x.test"})
	must(err)
	other, err := b.svc.CreateAudience(ctx, "ws_other", "O", "")
	must(err)
	_, err = b.svc.Import(ctx, "ws_other", other.ID, []contacts.ImportRow{{Row: 1, Email: "ann@x.test", Status: sub}}, false)
	must(err)

	_, _, err = suppressions.New(db, clk).Add(ctx, b.ws, "bob@x.test", "")
	must(err)
	_, _, err = suppressions.AddGlobal(ctx, db, "eve@x.test", suppressions.ReasonManual, clk.Now())
	must(err)
	_, _, err = suppressions.New(db, clk).Add(ctx, "ws_other", "ann@x.test", "") // another workspace's row stops nobody here
	must(err)

	tp := topics.New(db, clk, topics.LinkConfig{}, b.svc)
	off := false
	b.news, err = tp.Create(ctx, b.ws, topics.NewTopic{Name: "News"})
	must(err)
	b.optional, err = tp.Create(ctx, b.ws, topics.NewTopic{Name: "Optional", DefaultOptIn: &off})
	must(err)
	_, err = tp.SetPreference(ctx, b.ws, "dan@x.test", b.news.ID, false, "")
	must(err)
	_, err = tp.SetPreference(ctx, b.ws, "fay@x.test", b.optional.ID, true, "")
	must(err)
	b.old, err = tp.Create(ctx, b.ws, topics.NewTopic{Name: "Old"})
	must(err)
	_, err = tp.SetPreference(ctx, b.ws, "dan@x.test", b.old.ID, false, "")
	must(err)
	yes := true
	_, err = tp.Update(ctx, b.ws, b.old.ID, topics.Patch{Archived: &yes})
	must(err)

	all, err := b.svc.People(b.ws).List(ctx)
	must(err)
	for _, p := range all {
		b.ids[p.Email] = p.ContactID
	}
	return b
}

func names(ps []contacts.Person) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Email[:3])
	}
	slices.Sort(out)
	return out
}

func ruleSet(t *testing.T, withAudience bool, rs ...rules.Rule) *rules.Set {
	t.Helper()
	set, err := rules.Parse(rules.All, rs, withAudience)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestPeopleQueryOptions: each option of the one selection builder
// narrows as it says, on a real database; Count agrees with List.
func TestPeopleQueryOptions(t *testing.T) {
	t.Parallel()
	b := newPeopleBundle(t)
	ctx := context.Background()
	raw := func(s string) []byte { return []byte(`"` + s + `"`) }
	in := b.svc.People(b.ws).WithAudience(b.audience)
	news := contacts.TopicOptIn{ID: b.news.ID, DefaultOptIn: true}
	cases := []struct {
		name string
		q    contacts.PeopleQuery
		want []string
	}{
		{"the workspace's contacts", b.svc.People(b.ws), []string{"ann", "bob", "cat", "dan", "eve", "fay", "gus", "hal"}},
		{"an audience's members", in, []string{"ann", "bob", "cat", "dan", "eve", "fay"}},
		{"mailable members: subscribed, not suppressed here or globally", in.WithReach(contacts.Mailable), []string{"ann", "dan", "fay"}},
		{"mailable contacts: subscribed to a live audience", b.svc.People(b.ws).WithReach(contacts.Mailable), []string{"ann", "dan", "fay"}},
		{"a topic on by default leaves out who switched it off", in.WithReach(contacts.Mailable).WithTopic(news), []string{"ann", "fay"}},
		{"a topic off by default keeps who switched it on", in.WithReach(contacts.Mailable).WithTopic(contacts.TopicOptIn{ID: b.optional.ID}), []string{"fay"}},
		{"a required topic leaves nobody out", in.WithReach(contacts.Mailable).WithTopic(contacts.TopicOptIn{ID: b.news.ID, DefaultOptIn: true, Required: true}), []string{"ann", "dan", "fay"}},
		{"a topic alone does not narrow Everyone", in.WithTopic(news), []string{"ann", "bob", "cat", "dan", "eve", "fay"}},
		{"rules: tag", in.WithRules(ruleSet(t, true, rules.Rule{Field: "tag", Op: "has", Value: raw("vip")})), []string{"ann"}},
		{"rules: status", in.WithRules(ruleSet(t, true, rules.Rule{Field: "status", Op: "eq", Value: raw("unsubscribed")})), []string{"cat"}},
		{"rules: suppressed", b.svc.People(b.ws).WithRules(ruleSet(t, false, rules.Rule{Field: "suppressed", Op: "eq", Value: []byte("true")})), []string{"bob", "eve"}},
		{"rules: topic by key", b.svc.People(b.ws).WithRules(ruleSet(t, false, rules.Rule{Field: "topic", Op: "not_subscribed", Value: raw(b.news.Key)})), []string{"dan"}},
		{"rules: topic off by default", b.svc.People(b.ws).WithRules(ruleSet(t, false, rules.Rule{Field: "topic", Op: "subscribed", Value: raw(b.optional.ID)})), []string{"fay"}},
		// as topics.OptedOut (an automation's if step) reads it: an archived topic opts nobody out
		{"rules: an archived topic", b.svc.People(b.ws).WithRules(ruleSet(t, false, rules.Rule{Field: "topic", Op: "not_subscribed", Value: raw(b.old.Key)})), []string{}},
		{"an address", in.WithEmail("cat@x.test"), []string{"cat"}},
		{"an address that is not mailable", in.WithEmail("cat@x.test").WithReach(contacts.Mailable), []string{}},
		{"another workspace's people", b.svc.People("ws_other"), []string{"ann"}},
		{"its own suppression stops her there", b.svc.People("ws_other").WithReach(contacts.Mailable), []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := c.q.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(ps); !slices.Equal(got, c.want) {
				t.Fatalf("List kept %v, want %v", got, c.want)
			}
			n, err := c.q.Count(ctx)
			if err != nil || n != len(c.want) {
				t.Fatalf("Count = %d, %v; want %d", n, err, len(c.want))
			}
		})
	}
}

// TestPeopleQueryPaging: After and WithLimit page List in contact id
// order; Count ignores them.
func TestPeopleQueryPaging(t *testing.T) {
	t.Parallel()
	b := newPeopleBundle(t)
	ctx := context.Background()
	q := b.svc.People(b.ws).WithAudience(b.audience)
	all, err := q.List(ctx)
	if err != nil || len(all) != 6 {
		t.Fatalf("%d people, %v", len(all), err)
	}
	if !slices.IsSortedFunc(all, func(x, y contacts.Person) int { return strings.Compare(x.ContactID, y.ContactID) }) {
		t.Fatal("List is not in contact id order")
	}
	page, err := q.After(all[1].ContactID).WithLimit(2).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ContactID != all[2].ContactID || page[1].ContactID != all[3].ContactID {
		t.Fatalf("page after the second: %v", names(page))
	}
	if page[0].MemberID == "" || page[0].Status == "" {
		t.Fatalf("a member's row lacks its membership: %+v", page[0])
	}
	if n, err := q.After(all[1].ContactID).WithLimit(2).Count(ctx); err != nil || n != 6 {
		t.Fatalf("Count with paging = %d, %v; want 6", n, err)
	}
}

// TestPeopleQuerySnapshot: the snapshot SELECT keeps everyone selected,
// each with the first reason that stops mail, as a broadcast copies it.
func TestPeopleQuerySnapshot(t *testing.T) {
	t.Parallel()
	b := newPeopleBundle(t)
	ctx := context.Background()
	q := b.svc.People(b.ws).WithAudience(b.audience).WithTopic(contacts.TopicOptIn{ID: b.news.ID, DefaultOptIn: true})
	want := map[string]string{
		"ann@x.test": "", "bob@x.test": contacts.ReasonSuppressed, "cat@x.test": contacts.ReasonUnsubscribed,
		"dan@x.test": contacts.ReasonTopicOptOut, "eve@x.test": contacts.ReasonSuppressed, "fay@x.test": "",
	}
	if got := snapshotReasons(t, ctx, b, q); !maps.Equal(got, want) {
		t.Fatalf("reasons %v, want %v", got, want)
	}
	// Workspace-wide, consent is some live audience's: gus joined none,
	// hal only a deleted one.
	got := snapshotReasons(t, ctx, b, b.svc.People(b.ws).WithEmail("hal@x.test"))
	if !maps.Equal(got, map[string]string{"hal@x.test": contacts.ReasonUnsubscribed}) {
		t.Fatalf("hal: %v", got)
	}
}

func snapshotReasons(t *testing.T, ctx context.Context, b peopleBundle, q contacts.PeopleQuery) map[string]string {
	t.Helper()
	e := store.Cat(`SELECT p.email, p.reason FROM (`, q.Snapshot(), `) p`)
	rows, err := b.db.Query(ctx, e.SQL, e.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var email, reason string
		if err := rows.Scan(&email, &reason); err != nil {
			t.Fatal(err)
		}
		out[email] = reason
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
