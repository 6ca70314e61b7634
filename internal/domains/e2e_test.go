package domains_test

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"mailroom/internal/clock"
	"mailroom/internal/dnsresolve"
	"mailroom/internal/domains"
	"mailroom/internal/store"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testkeys"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

type bundle struct {
	*testapp.App
	dns *dnstest.Server
}

func setup(t *testing.T, opts ...testapp.Option) *bundle {
	t.Helper()
	s := dnstest.Start(t)
	opts = append([]testapp.Option{
		testapp.WithEnv("MAILROOM_DNS_RESOLVER", s.Addr()),
		testapp.WithEnv("MAILROOM_OUTBOUND_IPS", "192.0.2.10,2001:db8::10"),
	}, opts...)
	return &bundle{App: testapp.Start(t, opts...), dns: s}
}

type apiRecord struct {
	Record   string `json:"record"`
	Type     string `json:"type"`
	Name     string `json:"name"`
	Value    string `json:"value"`
	Priority *int   `json:"priority"`
	Status   string `json:"status"`
	Found    *bool  `json:"found"`
	Detail   string `json:"detail"`
	Required bool   `json:"required"`
}

type apiDomain struct {
	ID                 string      `json:"id"`
	Domain             string      `json:"domain"`
	Verified           *bool       `json:"verified"`
	VerificationStatus string      `json:"verification_status"`
	Shared             bool        `json:"shared"`
	Records            []apiRecord `json:"records"`
	DKIMRecordsPending bool        `json:"dkim_records_pending"`
	DKIMStatus         string      `json:"dkim_status"`
	TrackingHost       *string     `json:"tracking_host"`
	CreatedAt          string      `json:"created_at"`
}

func (b *bundle) create(t *testing.T, key, domain string) apiDomain {
	t.Helper()
	r := b.DoKey(key, "POST", "/v1/domains", map[string]any{"domain": domain})
	if r.Status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", domain, r.Status, r.Body)
	}
	var d apiDomain
	r.Decode(t, &d)
	return d
}

func (b *bundle) verify(t *testing.T, key, id string) apiDomain {
	t.Helper()
	r := b.DoKey(key, "POST", "/v1/domains/"+id+"/verify", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("verify: %d %s", r.Status, r.Body)
	}
	var d apiDomain
	r.Decode(t, &d)
	return d
}

// publish copies records from an API answer into DNS, as a domain owner would.
// A TXT value already published at the name is not added twice: DNS holds
// a record set, so the same record published again is still one.
func (b *bundle) publish(recs []apiRecord) {
	res := dnsresolve.New(b.dns.Addr())
	for _, r := range recs {
		switch r.Type {
		case "TXT":
			if have, _ := res.LookupTXT(context.Background(), r.Name); slices.Contains(have, r.Value) {
				continue
			}
			b.dns.AddTXT(r.Name, r.Value)
		case "MX":
			b.dns.AddMX(r.Name, r.Value, uint16(*r.Priority))
		case "CNAME":
			b.dns.AddCNAME(r.Name, r.Value)
		}
	}
}

func (b *bundle) countEvents(t *testing.T, typ string) int {
	t.Helper()
	var n int
	if err := b.DB.QueryRow(context.Background(), `SELECT COUNT(*) FROM events WHERE workspace_id = ? AND type = ?`,
		b.WorkspaceID, typ).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDomainVerifiesWhenPublishedAsReturned(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	s := scenario.New(b.App)
	rec := func(kind string, more shape) shape {
		more["record"], more["status"] = kind, "pending"
		return more
	}
	var d apiDomain
	verify := func(name string, want shape) sc {
		return sc{Name: name, Method: "POST", Path: "/v1/domains/{id}/verify", Status: 200, Shape: want}
	}
	s.Run(t, sc{Name: "create", Method: "POST", Path: "/v1/domains", Body: map[string]any{"domain": "Mail.Example.COM."}, Status: 201,
		Shape: shape{"id": scenario.Prefix("dom_"), "domain": "mail.example.com", "verification_status": "pending", "dkim_records_pending": false,
			"dkim_status": "pending", "tracking_host": nil, "created_at": scenario.Prefix("20"), "records": []any{
				rec("MX", shape{"value": "mx.mailroom.test", "priority": 10}),
				rec("MX", shape{"name": "send.mail.example.com", "value": "mx.mailroom.test", "required": true}),
				rec("DKIM", shape{}), rec("DKIM", shape{}), rec("DKIM", shape{}),
				rec("SPF", shape{"name": "send.mail.example.com", "value": "v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 ~all"}),
				rec("DMARC", shape{}), rec("OWNERSHIP", shape{}),
			}},
		Save: map[string]string{"id": "id"},
		Check: func(t testing.TB, r *testapp.Response) {
			if strings.Contains(string(r.Body), "PRIVATE") {
				t.Fatal("a private key leaked into records")
			}
			r.Decode(t, &d)
		}})

	// Nothing published: pending, nothing found.
	s.Run(t, verify("verify before publishing", shape{"verified": false, "verification_status": "pending", "domain": "mail.example.com",
		"records": scenario.Each(shape{"found": false})}))
	if st, _ := b.Domains().SendingStatus(ctx, b.WorkspaceID, "mail.example.com"); st != "pending" {
		t.Errorf("SendingStatus pending domain = %q", st)
	}
	if _, _, err := b.Domains().SigningKey(ctx, b.WorkspaceID, "mail.example.com"); err != store.ErrNotFound {
		t.Errorf("SigningKey of a pending domain: %v", err)
	}

	// Published: verified, each time asked, with one domain.verified.
	b.publish(d.Records)
	verified := shape{"verified": true, "verification_status": "verified", "dkim_status": "verified",
		"records": scenario.Each(shape{"found": true, "status": "verified"})}
	s.Run(t, verify("verify after publishing", verified), verify("and again", verified), verify("and a third time", verified))
	if n := b.countEvents(t, "domain.verified"); n != 1 {
		t.Fatalf("domain.verified raised %d times", n)
	}
	var seq int
	var data string
	b.DB.QueryRow(ctx, `SELECT sequence, data FROM events WHERE type = 'domain.verified'`).Scan(&seq, &data)
	if seq != 0 || data != fmt.Sprintf(`{"domain":"mail.example.com","domain_id":"%s"}`, d.ID) {
		t.Errorf("event sequence %d data %s", seq, data)
	}

	s.Run(t, sc{Name: "get after verify", Method: "GET", Path: "/v1/domains/{id}", Status: 200, Shape: shape{"verification_status": "verified"}})
	if st, err := b.Domains().SendingStatus(ctx, b.WorkspaceID, "MAIL.example.com"); st != "verified" || err != nil {
		t.Errorf("SendingStatus = %q, %v", st, err)
	}
	if st, _ := b.Domains().SendingStatus(ctx, b.WorkspaceID, "other.example.com"); st != "" {
		t.Errorf("SendingStatus of an unknown domain = %q", st)
	}
	sel, key, err := b.Domains().SigningKey(ctx, b.WorkspaceID, "mail.example.com")
	if err != nil || sel != "mr1" {
		t.Fatalf("SigningKey: %q %v", sel, err)
	}
	if want := domains.DKIMRecordValue(key.Public().(*rsa.PublicKey)); want != d.Records[2].Value {
		t.Errorf("signing key does not match the published mr1 record")
	}
}

// TestVerifyReportsTheWrongDKIMRecord: with every record published but
// one, verify names the one not found, and the domain verifies only when
// that record is optional (CONTRACT-WAVE2: every record but the receiving
// MX is required).
func TestVerifyReportsTheWrongDKIMRecord(t *testing.T) {
	b := setup(t)
	d := b.create(t, b.Key, "example.org")
	other := testkeys.Spare()
	cases := []struct {
		name     string
		tamper   func()
		missing  int // the record verify finds missing
		required bool
		status   string // the missing record's status
		dkim     string // dkim_status
		verified bool
		events   int // domain.verified raised so far
	}{
		{"a wrong mr2 key", func() {
			b.dns.Remove(d.Records[3].Name, dns.TypeTXT)
			b.dns.AddTXT(d.Records[3].Name, domains.DKIMRecordValue(&other.PublicKey))
		}, 3, true, "failed", "failed", false, 0},
		{"no DMARC", func() { b.dns.Remove("_dmarc.example.org", dns.TypeTXT) }, 6, true, "pending", "verified", false, 0},
		{"no receiving MX", func() { b.dns.Remove("example.org", dns.TypeMX) }, 0, false, "pending", "verified", true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.dns.Reset()
			b.publish(d.Records)
			c.tamper()
			v := b.verify(t, b.Key, d.ID)
			want := map[bool]string{true: "verified", false: "pending"}[c.verified]
			if *v.Verified != c.verified || v.VerificationStatus != want || v.DKIMStatus != c.dkim {
				t.Fatalf("verified=%v status %s dkim %s, want %v %s %s", *v.Verified, v.VerificationStatus, v.DKIMStatus, c.verified, want, c.dkim)
			}
			for i, r := range v.Records {
				if want := i != c.missing; *r.Found != want {
					t.Errorf("record %d (%s %s) found=%v", i, r.Record, r.Name, *r.Found)
				}
			}
			if m := v.Records[c.missing]; m.Required != c.required || m.Status != c.status || m.Name != d.Records[c.missing].Name {
				t.Errorf("the missing record reported as %+v", m)
			}
			if n := b.countEvents(t, "domain.verified"); n != c.events {
				t.Errorf("domain.verified raised %d times, want %d", n, c.events)
			}
		})
	}
	if !strings.HasPrefix(d.Records[3].Name, "mr2._domainkey.") {
		t.Errorf("record 3 is %s, not mr2's DKIM", d.Records[3].Name)
	}
}

func TestDomainsAcrossWorkspaces(t *testing.T) {
	b := setup(t)
	d := b.create(t, b.Key, "shop.example.net")
	s := scenario.New(b.App).WithOther()
	s.Set("id", d.ID)
	keyB := s.Get("other")
	elsewhere := func(method, path string, body any) sc {
		return sc{Name: "another workspace: " + method + " " + path, Method: method, Path: path, Key: "{other}", Body: body, Status: 404, Code: "not_found"}
	}
	tracking := map[string]any{"tracking_host": "links"}
	s.Run(t,
		elsewhere("GET", "/v1/domains/{id}", nil),
		elsewhere("POST", "/v1/domains/{id}/verify", nil),
		elsewhere("PATCH", "/v1/domains/{id}", tracking),
		elsewhere("GET", "/v1/domains/{id}/tracking", nil),
		elsewhere("PATCH", "/v1/domains/{id}/tracking", tracking),
		elsewhere("DELETE", "/v1/domains/{id}", nil),
		elsewhere("DELETE", "/v1/domains?id={id}", nil),
		sc{Name: "another workspace's list leaves it out", Method: "GET", Path: "/v1/domains", Key: "{other}", Status: 200,
			Shape: shape{"domains": scenario.Each(shape{"id": scenario.NotVar("id")})}},
		sc{Name: "the same workspace adds it twice", Method: "POST", Path: "/v1/domains", Body: map[string]any{"domain": "shop.example.net"},
			Status: 409, Code: "domain_exists"},
	)

	// B may add it while A has not verified it; then A verifies, and B cannot.
	dB := b.create(t, keyB, "shop.example.net")
	b.publish(d.Records)
	b.publish(dB.Records)
	if v := b.verify(t, b.Key, d.ID); !*v.Verified {
		t.Fatalf("A not verified: %+v", v)
	}
	if r := b.DoKey(keyB, "POST", "/v1/domains/"+dB.ID+"/verify", nil); r.Status != 409 || r.ErrCode() != "domain_taken" {
		t.Errorf("B verifying A's verified domain: %d %s", r.Status, r.Body)
	}
	_, keyC := b.NewWorkspace("Third", "third@example.com")
	if r := b.DoKey(keyC, "POST", "/v1/domains", map[string]any{"domain": "SHOP.example.net"}); r.Status != 409 || r.ErrCode() != "domain_taken" {
		t.Errorf("adding a domain verified elsewhere: %d %s", r.Status, r.Body)
	}
}

func TestCreateDomainRefusals(t *testing.T) {
	b := setup(t, testapp.WithEnv("MAILROOM_DOMAIN_LIMIT", "1"))
	bad := func(name string, body any) sc {
		return sc{Name: "refused: " + name, Method: "POST", Path: "/v1/domains", Body: body, Status: 400, Code: "invalid_request"}
	}
	taken := func(name string) sc {
		return sc{Name: "the service's own: " + name, Method: "POST", Path: "/v1/domains", Body: map[string]any{"domain": name}, Status: 409, Code: "domain_taken"}
	}
	scenario.New(b.App).Run(t,
		bad("no dot", map[string]any{"domain": "localhost"}),
		bad("a space", map[string]any{"domain": "exa mple.com"}),
		bad("an address", map[string]any{"domain": "192.0.2.1"}),
		bad("a wildcard", map[string]any{"domain": "*.example.com"}),
		bad("empty", map[string]any{"domain": ""}),
		bad("a number", map[string]any{"domain": 5}),
		bad("missing", map[string]any{}),
		bad("an unknown field", map[string]any{"domain": "example.com", "extra": 1}),
		taken("mailroom.test"),
		taken("acme.mailroom.test"),
		sc{Name: "an IDN is stored in punycode", Method: "POST", Path: "/v1/domains", Body: map[string]any{"domain": "bücher.example"}, Status: 201,
			Shape: shape{"domain": "xn--bcher-kva.example"}},
		sc{Name: "over the limit", Method: "POST", Path: "/v1/domains", Body: map[string]any{"domain": "second.example"}, Status: 402, Code: "domain_limit_reached"},
		// The workspace's own subdomain does not count towards the limit.
		sc{Name: "the subdomain and the one domain", Method: "GET", Path: "/v1/domains", Status: 200,
			Shape: shape{"domains": []any{shape{"shared": true}, shape{"domain": "xn--bcher-kva.example", "shared": false}}}},
	)
}

func TestDeleteDomain(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	s := scenario.New(b.App)
	s.Set("id", b.create(t, b.Key, "a.example.com").ID)
	shared, err := b.Domains().EnsureWorkspaceDomain(ctx, b.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	s.Set("shared", shared.ID)
	del := func(name, path string, status int, code string) sc {
		return sc{Name: name, Method: "DELETE", Path: path, Status: status, Code: code}
	}
	s.Run(t,
		sc{Name: "delete", Method: "DELETE", Path: "/v1/domains/{id}", Status: 200,
			Check: func(t testing.TB, r *testapp.Response) {
				if want := fmt.Sprintf(`{"deleted":true,"id":"%s"}`+"\n", s.Get("id")); string(r.Body) != want {
					t.Fatalf("delete answered %s, want %s", r.Body, want)
				}
			}},
		sc{Name: "get after delete", Method: "GET", Path: "/v1/domains/{id}", Status: 404, Code: "not_found"},
		del("second delete", "/v1/domains/{id}", 404, "not_found"),
		sc{Name: "it can be added again", Method: "POST", Path: "/v1/domains", Body: map[string]any{"domain": "a.example.com"}, Status: 201,
			Save: map[string]string{"id": "id"}},
	)
	if _, err := b.DB.Exec(ctx, `INSERT INTO mailboxes (id, workspace_id, domain_id, address, created_at) VALUES ('mbx_1', ?, ?, 'hi@a.example.com', 0)`,
		b.WorkspaceID, s.Get("id")); err != nil {
		t.Fatal(err)
	}
	s.Run(t, sc{Name: "refused while a mailbox uses it", Method: "DELETE", Path: "/v1/domains?id={id}", Status: 409, Code: "domain_in_use",
		Shape: shape{"error": shape{"mailboxes": 1}}})
	b.DB.Exec(ctx, `DELETE FROM mailboxes`)
	s.Run(t,
		del("deprecated delete", "/v1/domains?id={id}", 200, ""),
		del("deprecated delete without id", "/v1/domains", 400, "invalid_request"),
		del("the workspace subdomain", "/v1/domains/{shared}", 409, "workspace_domain_protected"),
	)
	var keys int
	b.DB.QueryRow(ctx, `SELECT COUNT(*) FROM domain_keys WHERE domain_id = ?`, s.Get("id")).Scan(&keys)
	if keys != 0 {
		t.Errorf("%d keys left behind", keys)
	}
}

func TestWorkspaceSubdomain(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	var list struct {
		Domains    []apiDomain
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	}
	// Concurrent first reads create exactly one subdomain.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { b.Do("GET", "/v1/domains", nil) })
	}
	wg.Wait()
	b.Do("GET", "/v1/domains", nil).Decode(t, &list)
	if len(list.Domains) != 1 || list.HasMore || list.NextCursor != nil {
		t.Fatalf("list %+v", list)
	}
	s := list.Domains[0]
	if !s.Shared || s.VerificationStatus != "verified" || !strings.HasPrefix(s.Domain, "test-workspace-") || !strings.HasSuffix(s.Domain, ".mailroom.test") {
		t.Fatalf("workspace subdomain %+v", s)
	}
	if st, _ := b.Domains().SendingStatus(ctx, b.WorkspaceID, s.Domain); st != "verified" {
		t.Errorf("SendingStatus = %q", st)
	}
	if sel, _, err := b.Domains().SigningKey(ctx, b.WorkspaceID, s.Domain); err != nil || sel != "mr1" {
		t.Errorf("SigningKey: %q %v", sel, err)
	}
	// Its records are verified only once they resolve (#44 item 7); it
	// sends meanwhile, as the operator's zone is not the workspace's.
	statuses := func(d apiDomain) map[string]bool {
		out := map[string]bool{}
		for _, r := range d.Records {
			out[r.Status] = true
		}
		return out
	}
	if st := statuses(s); st["verified"] {
		t.Errorf("workspace subdomain records shown verified before any check: %+v", s.Records)
	}
	if v := b.verify(t, b.Key, s.ID); !*v.Verified || statuses(v)["verified"] {
		t.Errorf("verify shared, nothing published: %+v", v)
	}
	b.publish(s.Records)
	if v := b.verify(t, b.Key, s.ID); !*v.Verified || len(statuses(v)) != 1 || !statuses(v)["verified"] {
		t.Errorf("verify shared, records published: %+v", v.Records)
	}
	r := b.Do("PATCH", "/v1/domains/"+s.ID, map[string]any{"tracking_host": "links"})
	if r.Status != 422 || r.ErrCode() != "tracking_needs_custom_domain" {
		t.Errorf("tracking on the shared subdomain: %d %s", r.Status, r.Body)
	}
}

func TestTrackingHost(t *testing.T) {
	b := setup(t)
	d := b.create(t, b.Key, "example.com")
	b.dns.AddCNAME("links.example.com", "TRACK.mailroom.test.")
	b.dns.AddCNAME("wrong.example.com", "elsewhere.example.net")
	s := scenario.New(b.App)
	s.Set("id", d.ID)

	patch := func(name string, body map[string]any, status int, code string) sc {
		return sc{Name: name, Method: "PATCH", Path: "/v1/domains/{id}", Body: body, Status: status, Code: code}
	}
	bad := func(name string, body map[string]any) sc { return patch(name, body, 400, "invalid_request") }
	noCNAME := func(name, host string) sc {
		c := patch(name, map[string]any{"tracking_host": host}, 422, "tracking_cname_not_found")
		c.Shape = shape{"error": shape{"cname_target": "track.mailroom.test"}}
		return c
	}
	set := func(name, path string, host any, want any) sc {
		return sc{Name: name, Method: "PATCH", Path: path, Body: map[string]any{"tracking_host": host}, Status: 200,
			Shape: shape{"tracking_host": want}}
	}
	tracking := func(name string, want shape) sc {
		return sc{Name: name, Method: "GET", Path: "/v1/domains/{id}/tracking", Status: 200, Shape: want,
			Save: map[string]string{"shared": "shared_host"}}
	}
	s.Run(t,
		patch("switch refused before unknown fields", map[string]any{"open_tracking": true, "bogus": 1}, 422, "tracking_switch_not_supported"),
		patch("click switch", map[string]any{"tracking_host": "links", "click_tracking": false}, 422, "tracking_switch_not_supported"),
		bad("unknown field", map[string]any{"tracking_host": "links", "bogus": 1}),
		bad("empty body changes nothing", map[string]any{}),
		bad("null when already shared", map[string]any{"tracking_host": nil}),
		bad("number", map[string]any{"tracking_host": 5}),
		bad("not a host", map[string]any{"tracking_host": "bad host!"}),
		bad("not under the domain", map[string]any{"tracking_host": "links.example.net"}),
		bad("the domain itself", map[string]any{"tracking_host": "example.com"}),
		noCNAME("no CNAME", "clicks"),
		noCNAME("CNAME elsewhere", "wrong.example.com"),
		set("bare label expanded", "/v1/domains/{id}", "links", "links.example.com"),
		bad("same again changes nothing", map[string]any{"tracking_host": "LINKS.example.com."}),
		set("null restores shared", "/v1/domains/{id}", nil, nil),
		set("full name via /tracking", "/v1/domains/{id}/tracking", "links.example.com", "links.example.com"),
		tracking("GET tracking", shape{"tracking_host": "links.example.com", "host": "links.example.com", "cname_found": true,
			"cname_target": "track.mailroom.test", "domain_id": scenario.Var("id")}),
	)
	b.dns.Remove("links.example.com", dns.TypeCNAME)
	s.Run(t,
		tracking("cname_found after removal", shape{"cname_found": false}),
		set("back to the shared host", "/v1/domains/{id}", nil, nil),
		tracking("GET tracking without a custom host", shape{"cname_found": nil, "tracking_host": nil, "host": scenario.Var("shared")}),
	)
}

func TestNightlyRecheck(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	svc := b.Domains()
	verified := b.create(t, b.Key, "kept.example.com")
	b.publish(verified.Records)
	b.verify(t, b.Key, verified.ID)
	pending := b.create(t, b.Key, "later.example.com")

	// The pass verifies a pending domain whose records appeared.
	b.publish(pending.Records)
	if n, err := svc.RecheckAll(ctx); err != nil || n != 2 {
		t.Fatalf("RecheckAll: %d %v", n, err)
	}
	status := func(id string) string {
		var d apiDomain
		b.Do("GET", "/v1/domains/"+id, nil).Decode(t, &d)
		return d.VerificationStatus
	}
	if st := status(pending.ID); st != "verified" {
		t.Fatalf("pending domain after the pass: %s", st)
	}
	if n := b.countEvents(t, "domain.verified"); n != 2 {
		t.Fatalf("domain.verified count %d", n)
	}

	// Records gone: two passes of grace, the third demotes.
	b.dns.Reset()
	b.publish(pending.Records)
	for i := range 2 {
		svc.RecheckAll(ctx)
		if st := status(verified.ID); st != "verified" {
			t.Fatalf("after %d failed passes: %s", i+1, st)
		}
	}
	// A manual verify reports the records missing but does not count.
	if v := b.verify(t, b.Key, verified.ID); !*v.Verified || *v.Records[1].Found {
		t.Fatalf("manual verify during grace: %+v", v)
	}
	svc.RecheckAll(ctx)
	if st := status(verified.ID); st != "failed" {
		t.Fatalf("after 3 failed passes: %s", st)
	}
	if st, _ := svc.SendingStatus(ctx, b.WorkspaceID, "kept.example.com"); st != "pending" {
		t.Errorf("SendingStatus of a failed domain = %q", st)
	}
	if _, _, err := svc.SigningKey(ctx, b.WorkspaceID, "kept.example.com"); err != store.ErrNotFound {
		t.Errorf("SigningKey of a failed domain: %v", err)
	}
	if st := status(pending.ID); st != "verified" {
		t.Errorf("the other domain: %s", st)
	}

	// Republished: the next pass (or a verify) restores it and says so.
	b.publish(verified.Records)
	svc.RecheckAll(ctx)
	if st := status(verified.ID); st != "verified" {
		t.Fatalf("after republishing: %s", st)
	}
	if n := b.countEvents(t, "domain.verified"); n != 3 {
		t.Errorf("domain.verified count %d", n)
	}
	// A successful pass resets the failure count: one miss does not demote.
	b.dns.Reset()
	svc.RecheckAll(ctx)
	if st := status(verified.ID); st != "verified" {
		t.Errorf("one miss after recovery: %s", st)
	}
}

func TestServiceKeyGeneratedOnce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	// A second service over the same database stands for another node.
	other := domains.New(b.DB, b.Box, b.Clock, nil, domains.Config{ServiceDomain: "mailroom.test",
		NewKey: func() (*rsa.PrivateKey, error) { return testkeys.Spare(), nil }}, nil) // a key the first node's source never makes
	type result struct {
		domain, sel string
		key         *rsa.PrivateKey
		err         error
	}
	results := make([]result, 4)
	var wg sync.WaitGroup
	for i := range results {
		svc := b.Domains()
		if i%2 == 1 {
			svc = other
		}
		wg.Go(func() {
			d, sel, k, err := svc.ServiceKey(ctx)
			rk, _ := k.(*rsa.PrivateKey)
			results[i] = result{d, sel, rk, err}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.domain != "mailroom.test" || r.sel != "mr1" || r.key == nil || !r.key.Equal(results[0].key) {
			t.Fatalf("node %d: %+v", i, r)
		}
	}
	var n int
	var sealed string
	b.DB.QueryRow(ctx, `SELECT COUNT(*), MIN(private_key) FROM service_keys`).Scan(&n, &sealed)
	if n != 1 || strings.Contains(sealed, "PRIVATE KEY") {
		t.Errorf("%d service key rows; stored in the clear: %v", n, strings.Contains(sealed, "PRIVATE KEY"))
	}
}

// BenchmarkCreateDomain measures POST /v1/domains through the real node,
// dominated by generating three RSA-2048 keys concurrently.
func BenchmarkCreateDomain(tb *testing.B) {
	b := &bundle{App: testapp.Start(tb)}
	b.SkipOpenAPI = true
	i := 0
	for tb.Loop() {
		i++
		if r := b.Do("POST", "/v1/domains", map[string]any{"domain": fmt.Sprintf("d%d.example.com", i)}); r.Status != 201 {
			tb.Fatalf("%d %s", r.Status, r.Body)
		}
	}
}

// A mailbox created after Delete counted none and before it deletes: the
// test holds Delete in that gap (OnDeleteCounted), creates the mailbox,
// then lets it go. The mailbox is created as a creator would, only on a
// domain that exists. PostgreSQL: the mailbox commits, the delete hits the
// foreign key (migration 00008) and answers 409 domain_in_use with the
// mailbox counted. SQLite: the delete holds the one writer, so the insert
// runs after it and finds no domain; the delete answers 200. Either way no
// mailbox outlives its domain.
func TestDomainDeleteRacingAMailbox(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	d := b.create(t, b.Key, "a.example.com")
	counted, release := make(chan struct{}), make(chan struct{})
	b.Domains().OnDeleteCounted(func() { close(counted); <-release })
	deleted := make(chan *testapp.Response, 1)
	go func() { deleted <- b.Do("DELETE", "/v1/domains/"+d.ID, nil) }()
	select {
	case <-counted:
	case <-time.After(20 * time.Second):
		t.Fatal("the delete never reached its mailbox count")
	}
	inserted := make(chan error, 1)
	go func() {
		_, err := b.DB.Exec(ctx, `INSERT INTO mailboxes (id, workspace_id, domain_id, address, created_at)
			SELECT 'mbx_1', workspace_id, id, 'hey@a.example.com', 0 FROM domains WHERE id = ?`, d.ID)
		inserted <- err
	}()
	postgres := b.DB.Dialect == store.Postgres
	done := false
	if postgres {
		// Delete's transaction has only read: the mailbox commits now.
		if err := <-inserted; err != nil {
			t.Fatalf("mailbox insert while the delete is held: %v", err)
		}
		done = true
	} else {
		// The insert has to wait for Delete's writer; give it time to get
		// through if it can. Only a broken delete can pass through this
		// wait, never can a correct one fail on it.
		select {
		case err := <-inserted:
			if err != nil {
				t.Fatalf("mailbox insert while the delete is held: %v", err)
			}
			done = true
		case <-time.After(300 * time.Millisecond):
		}
	}
	close(release)
	r := <-deleted
	if !done {
		if err := <-inserted; err != nil {
			t.Fatalf("mailbox insert after the delete: %v", err)
		}
	}
	var mailboxes int
	if err := b.DB.QueryRow(ctx, `SELECT COUNT(*) FROM mailboxes WHERE domain_id = ?`, d.ID).Scan(&mailboxes); err != nil {
		t.Fatal(err)
	}
	if postgres {
		if r.Status != 409 || r.ErrCode() != "domain_in_use" || r.JSON()["error"].(map[string]any)["mailboxes"] != float64(1) {
			t.Fatalf("delete racing a mailbox insert: %d %s", r.Status, r.Body)
		}
		if g := b.Do("GET", "/v1/domains/"+d.ID, nil); g.Status != 200 || mailboxes != 1 {
			t.Fatalf("after the refused delete: GET %d, %d mailboxes", g.Status, mailboxes)
		}
		return
	}
	if r.Status != 200 {
		t.Fatalf("delete holding the writer: %d %s", r.Status, r.Body)
	}
	if mailboxes != 0 {
		t.Fatalf("%d mailboxes outlive their deleted domain", mailboxes)
	}
}

// TestBounceSubdomainReturnPath: mail from a domain whose bounce subdomain
// MX was found gets its Return-Path there; a verified domain without it
// (verified before the subdomain was asked for, or it was taken away)
// keeps the domain's own Return-Path and stays verified through the
// nightly passes, its missing records pending in the read.
func TestBounceSubdomainReturnPath(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	svc := b.Domains()
	d := b.create(t, b.Key, "bounce.example.com")
	b.publish(d.Records)
	if v := b.verify(t, b.Key, d.ID); !*v.Verified {
		t.Fatalf("verify: %+v", v)
	}
	if got, err := svc.ReturnPathDomain(ctx, b.WorkspaceID, "Bounce.Example.com"); err != nil || got != "send.bounce.example.com" {
		t.Fatalf("ReturnPathDomain with the bounce MX: %q %v", got, err)
	}

	b.dns.Remove("send.bounce.example.com", dns.TypeMX)
	b.dns.Remove("send.bounce.example.com", dns.TypeTXT)
	b.dns.Remove("_dmarc.bounce.example.com", dns.TypeTXT)
	for range 4 {
		svc.RecheckAll(ctx)
	}
	var got apiDomain
	b.Do("GET", "/v1/domains/"+d.ID, nil).Decode(t, &got)
	if got.VerificationStatus != "verified" || got.Records[1].Status != "pending" || got.Records[5].Status == "verified" || got.Records[6].Status != "pending" {
		t.Fatalf("after passes without the bounce subdomain: %+v", got)
	}
	if rp, err := svc.ReturnPathDomain(ctx, b.WorkspaceID, "bounce.example.com"); err != nil || rp != "bounce.example.com" {
		t.Fatalf("ReturnPathDomain without the bounce MX: %q %v", rp, err)
	}
	// The workspace subdomain is its own Return-Path domain.
	var list struct{ Domains []apiDomain }
	b.Do("GET", "/v1/domains", nil).Decode(t, &list)
	for _, x := range list.Domains {
		if x.Shared {
			if rp, _ := svc.ReturnPathDomain(ctx, b.WorkspaceID, x.Domain); rp != x.Domain {
				t.Errorf("workspace subdomain %s: Return-Path domain %q", x.Domain, rp)
			}
		}
	}
}

// TestTrackingHostRemembered: the host asked per tracked email is read
// once per trackingHostFor; a change through this node is seen at once, one
// made elsewhere (another node: here the row written directly) once the
// remembered answer expires.
func TestTrackingHostRemembered(t *testing.T) {
	c := clock.NewFake(time.Now())
	b := setup(t, testapp.WithClock(c))
	d := b.create(t, b.Key, "example.com")
	b.dns.AddCNAME("links.example.com", "TRACK.mailroom.test.")
	ctx := context.Background()
	host := func() string {
		t.Helper()
		h, err := b.Domains().TrackingHost(ctx, b.WorkspaceID, "Example.com")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := host(); h != "" {
		t.Fatalf("before any tracking host: %q", h)
	}
	if r := b.Do("PATCH", "/v1/domains/"+d.ID, map[string]any{"tracking_host": "links"}); r.Status != 200 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	}
	if h := host(); h != "links.example.com" {
		t.Fatalf("just after the PATCH: %q", h)
	}
	if _, err := b.DB.Exec(ctx, `UPDATE domains SET tracking_host = NULL WHERE id = ?`, d.ID); err != nil {
		t.Fatal(err)
	}
	if h := host(); h != "links.example.com" {
		t.Fatalf("within %v of the last read: %q, want the remembered host", domains.TrackingHostFor, h)
	}
	c.Advance(domains.TrackingHostFor + time.Second)
	if h := host(); h != "" {
		t.Fatalf("after %v: %q, want the change made elsewhere", domains.TrackingHostFor, h)
	}
}
