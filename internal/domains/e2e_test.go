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
	d := b.create(t, b.Key, "Mail.Example.COM.")
	if !strings.HasPrefix(d.ID, "dom_") || d.Domain != "mail.example.com" || d.VerificationStatus != "pending" ||
		d.DKIMRecordsPending || d.DKIMStatus != "pending" || d.TrackingHost != nil || d.CreatedAt == "" {
		t.Fatalf("created %+v", d)
	}
	var kinds []string
	for _, r := range d.Records {
		kinds = append(kinds, r.Record)
		if r.Status != "pending" {
			t.Errorf("%s status %s", r.Record, r.Status)
		}
		if strings.Contains(r.Value, "PRIVATE") {
			t.Fatal("a private key leaked into records")
		}
	}
	if got := strings.Join(kinds, ","); got != "MX,MX,DKIM,DKIM,DKIM,SPF,DMARC,OWNERSHIP" {
		t.Fatalf("records %s", got)
	}
	if spf := d.Records[5]; spf.Value != "v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 ~all" || spf.Name != "send."+d.Domain {
		t.Errorf("SPF %+v", spf)
	}
	if mx := d.Records[1]; mx.Name != "send."+d.Domain || mx.Value != "mx.mailroom.test" || !mx.Required {
		t.Errorf("bounce MX %+v", mx)
	}
	if mx := d.Records[0]; mx.Value != "mx.mailroom.test" || mx.Priority == nil || *mx.Priority != 10 {
		t.Errorf("MX %+v", mx)
	}

	// Nothing published: pending, nothing found.
	v := b.verify(t, b.Key, d.ID)
	if *v.Verified || v.VerificationStatus != "pending" || v.Domain != d.Domain {
		t.Fatalf("verify before publishing: %+v", v)
	}
	for _, r := range v.Records {
		if r.Found == nil || *r.Found {
			t.Errorf("%s %s found=%v before publishing", r.Record, r.Name, r.Found)
		}
	}
	if st, _ := b.Domains().SendingStatus(ctx, b.WorkspaceID, "mail.example.com"); st != "pending" {
		t.Errorf("SendingStatus pending domain = %q", st)
	}
	if _, _, err := b.Domains().SigningKey(ctx, b.WorkspaceID, "mail.example.com"); err != store.ErrNotFound {
		t.Errorf("SigningKey of a pending domain: %v", err)
	}

	b.publish(d.Records)
	for i := range 3 {
		v = b.verify(t, b.Key, d.ID)
		if !*v.Verified || v.VerificationStatus != "verified" || v.DKIMStatus != "verified" {
			t.Fatalf("verify %d after publishing: %+v", i, v)
		}
		for _, r := range v.Records {
			if !*r.Found || r.Status != "verified" {
				t.Errorf("%s %s found=%v status=%s", r.Record, r.Name, *r.Found, r.Status)
			}
		}
	}
	if n := b.countEvents(t, "domain.verified"); n != 1 {
		t.Fatalf("domain.verified raised %d times", n)
	}
	var seq int
	var data string
	b.DB.QueryRow(ctx, `SELECT sequence, data FROM events WHERE type = 'domain.verified'`).Scan(&seq, &data)
	if seq != 0 || data != fmt.Sprintf(`{"domain":"mail.example.com","domain_id":"%s"}`, d.ID) {
		t.Errorf("event sequence %d data %s", seq, data)
	}

	r := b.Do("GET", "/v1/domains/"+d.ID, nil)
	var got apiDomain
	r.Decode(t, &got)
	if r.Status != 200 || got.VerificationStatus != "verified" {
		t.Fatalf("GET after verify: %d %s", r.Status, r.Body)
	}
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

func TestVerifyReportsTheWrongDKIMRecord(t *testing.T) {
	b := setup(t)
	d := b.create(t, b.Key, "example.org")
	b.publish(d.Records)
	other := testkeys.Spare()
	b.dns.Remove(d.Records[3].Name, dns.TypeTXT)
	b.dns.AddTXT(d.Records[3].Name, domains.DKIMRecordValue(&other.PublicKey))

	v := b.verify(t, b.Key, d.ID)
	if *v.Verified || v.VerificationStatus != "pending" || v.DKIMStatus != "failed" {
		t.Fatalf("verify with a wrong mr2 key: %+v", v)
	}
	for i, r := range v.Records {
		if want := i != 3; *r.Found != want {
			t.Errorf("record %d (%s %s) found=%v", i, r.Record, r.Name, *r.Found)
		}
	}
	if v.Records[3].Status != "failed" || !strings.HasPrefix(v.Records[3].Name, "mr2._domainkey.") {
		t.Errorf("wrong record reported as %+v", v.Records[3])
	}
	if n := b.countEvents(t, "domain.verified"); n != 0 {
		t.Errorf("domain.verified raised %d times", n)
	}

	// DMARC is required (CONTRACT-WAVE2: every record but the receiving MX).
	b.dns.Reset()
	b.publish(d.Records)
	b.dns.Remove("_dmarc.example.org", dns.TypeTXT)
	if v = b.verify(t, b.Key, d.ID); *v.Verified || *v.Records[6].Found || !v.Records[6].Required {
		t.Fatalf("verify without DMARC: %+v", v)
	}
	// The receiving MX is optional: without it the domain verifies.
	b.dns.Reset()
	b.publish(d.Records)
	b.dns.Remove("example.org", dns.TypeMX)
	v = b.verify(t, b.Key, d.ID)
	if !*v.Verified || *v.Records[0].Found || v.Records[0].Required || !*v.Records[1].Found {
		t.Fatalf("verify without the receiving MX: %+v", v)
	}
}

func TestDomainsAcrossWorkspaces(t *testing.T) {
	b := setup(t)
	_, keyB := b.NewWorkspace("Other", "other@example.com")
	d := b.create(t, b.Key, "shop.example.net")

	s := scenario.New(b.App)
	s.Set("id", d.ID)
	s.Set("b", keyB)
	elsewhere := func(method, path string, body any) sc {
		return sc{Name: "another workspace: " + method + " " + path, Method: method, Path: path, Key: "{b}", Body: body, Status: 404, Code: "not_found"}
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
		sc{Name: "another workspace's list leaves it out", Method: "GET", Path: "/v1/domains", Key: "{b}", Status: 200,
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
	d := b.create(t, b.Key, "a.example.com")
	r := b.Do("DELETE", "/v1/domains/"+d.ID, nil)
	if r.Status != 200 || string(r.Body) != fmt.Sprintf(`{"deleted":true,"id":"%s"}`+"\n", d.ID) {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := b.Do("GET", "/v1/domains/"+d.ID, nil); r.Status != 404 {
		t.Errorf("GET after delete: %d", r.Status)
	}
	if r := b.Do("DELETE", "/v1/domains/"+d.ID, nil); r.Status != 404 {
		t.Errorf("second delete: %d", r.Status)
	}

	d = b.create(t, b.Key, "a.example.com") // can be added again
	if _, err := b.DB.Exec(ctx, `INSERT INTO mailboxes (id, workspace_id, domain_id, address, created_at) VALUES ('mbx_1', ?, ?, 'hi@a.example.com', 0)`,
		b.WorkspaceID, d.ID); err != nil {
		t.Fatal(err)
	}
	r = b.Do("DELETE", "/v1/domains?id="+d.ID, nil)
	if r.Status != 409 || r.ErrCode() != "domain_in_use" || r.JSON()["error"].(map[string]any)["mailboxes"] != float64(1) {
		t.Fatalf("delete with a mailbox: %d %s", r.Status, r.Body)
	}
	b.DB.Exec(ctx, `DELETE FROM mailboxes`)

	if r := b.Do("DELETE", "/v1/domains?id="+d.ID, nil); r.Status != 200 {
		t.Fatalf("deprecated delete: %d %s", r.Status, r.Body)
	}
	if r := b.Do("DELETE", "/v1/domains", nil); r.Status != 400 {
		t.Errorf("deprecated delete without id: %d %s", r.Status, r.Body)
	}
	var keys int
	b.DB.QueryRow(ctx, `SELECT COUNT(*) FROM domain_keys WHERE domain_id = ?`, d.ID).Scan(&keys)
	if keys != 0 {
		t.Errorf("%d keys left behind", keys)
	}

	shared, err := b.Domains().EnsureWorkspaceDomain(ctx, b.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Do("DELETE", "/v1/domains/"+shared.ID, nil); r.Status != 409 || r.ErrCode() != "workspace_domain_protected" {
		t.Errorf("delete workspace subdomain: %d %s", r.Status, r.Body)
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
	path := "/v1/domains/" + d.ID

	steps := []struct {
		name   string
		path   string
		body   any
		status int
		code   string
		host   any // expected tracking_host after a 200
	}{
		{"switch refused before unknown fields", path, map[string]any{"open_tracking": true, "bogus": 1}, 422, "tracking_switch_not_supported", nil},
		{"click switch", path, map[string]any{"tracking_host": "links", "click_tracking": false}, 422, "tracking_switch_not_supported", nil},
		{"unknown field", path, map[string]any{"tracking_host": "links", "bogus": 1}, 400, "invalid_request", nil},
		{"empty body changes nothing", path, map[string]any{}, 400, "invalid_request", nil},
		{"null when already shared", path, map[string]any{"tracking_host": nil}, 400, "invalid_request", nil},
		{"number", path, map[string]any{"tracking_host": 5}, 400, "invalid_request", nil},
		{"not a host", path, map[string]any{"tracking_host": "bad host!"}, 400, "invalid_request", nil},
		{"not under the domain", path, map[string]any{"tracking_host": "links.example.net"}, 400, "invalid_request", nil},
		{"the domain itself", path, map[string]any{"tracking_host": "example.com"}, 400, "invalid_request", nil},
		{"no CNAME", path, map[string]any{"tracking_host": "clicks"}, 422, "tracking_cname_not_found", nil},
		{"CNAME elsewhere", path, map[string]any{"tracking_host": "wrong.example.com"}, 422, "tracking_cname_not_found", nil},
		{"bare label expanded", path, map[string]any{"tracking_host": "links"}, 200, "", "links.example.com"},
		{"same again changes nothing", path, map[string]any{"tracking_host": "LINKS.example.com."}, 400, "invalid_request", nil},
		{"null restores shared", path, map[string]any{"tracking_host": nil}, 200, "", nil},
		{"full name via /tracking", path + "/tracking", map[string]any{"tracking_host": "links.example.com"}, 200, "", "links.example.com"},
	}
	for _, st := range steps {
		r := b.Do("PATCH", st.path, st.body)
		if r.Status != st.status || (st.code != "" && r.ErrCode() != st.code) {
			t.Fatalf("%s: %d %s", st.name, r.Status, r.Body)
		}
		if st.status == 200 {
			if got := r.JSON()["tracking_host"]; got != st.host {
				t.Fatalf("%s: tracking_host %v, want %v", st.name, got, st.host)
			}
		}
		if st.code == "tracking_cname_not_found" && r.JSON()["error"].(map[string]any)["cname_target"] != "track.mailroom.test" {
			t.Errorf("%s: no cname_target in %s", st.name, r.Body)
		}
	}

	r := b.Do("GET", path+"/tracking", nil)
	m := r.JSON()
	if r.Status != 200 || m["tracking_host"] != "links.example.com" || m["host"] != "links.example.com" ||
		m["cname_found"] != true || m["cname_target"] != "track.mailroom.test" || m["domain_id"] != d.ID {
		t.Fatalf("GET tracking: %d %s", r.Status, r.Body)
	}
	b.dns.Remove("links.example.com", dns.TypeCNAME)
	if m := b.Do("GET", path+"/tracking", nil).JSON(); m["cname_found"] != false {
		t.Errorf("cname_found after removal: %v", m["cname_found"])
	}
	b.Do("PATCH", path, map[string]any{"tracking_host": nil})
	if m := b.Do("GET", path+"/tracking", nil).JSON(); m["cname_found"] != nil || m["tracking_host"] != nil || m["host"] != m["shared_host"] {
		t.Errorf("GET tracking without a custom host: %v", m)
	}
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
