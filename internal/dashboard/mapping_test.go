package dashboard_test

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

var columnSelect = regexp.MustCompile(`(?s)<select id="role-\d+" name="(role\.\d+)" data-column="([^"]*)">(.*?)</select>`)
var selectedOption = regexp.MustCompile(`<option value="(\w+)" selected>`)
var checkedField = regexp.MustCompile(`name="checked" value="([^"]*)"`)

// proposed reads the mapping page's selects: column → (field, chosen role).
func proposed(t testing.TB, body string) (map[string]string, map[string]string) {
	t.Helper()
	roles, fields := map[string]string{}, map[string]string{}
	for _, m := range columnSelect.FindAllStringSubmatch(body, -1) {
		sel := selectedOption.FindStringSubmatch(m[3])
		if sel == nil {
			t.Fatalf("column %s has no role selected", m[2])
		}
		roles[m[2]], fields[m[2]] = sel[1], m[1]
	}
	return roles, fields
}

// noAPIHint fails when the page's content (the navigation aside) points
// the person to the API.
func noAPIHint(t *testing.T, p page) {
	t.Helper()
	_, content, _ := strings.Cut(p.body, "<main>")
	for _, hint := range []string{"API", "mapping.", "/v1/", "curl"} {
		if strings.Contains(content, hint) {
			t.Fatalf("the page hints at the API (%q):\n%s", hint, content)
		}
	}
}

// TestImportMappingSteps drives the dashboard's import of a real
// Mailchimp export over HTTP: the upload's page proposes each column's
// role from its name, a column changed to ignore stays out, the check (a
// dry run) counts what would happen and writes nothing, and the import
// then follows the chosen mapping: first names set, tags split.
func TestImportMappingSteps(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := a.Do(method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r.JSON()
	}
	aud := must("POST", "/v1/audiences", map[string]any{"name": "Readers"}, 201)["id"].(string)
	must("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "carl@example.net"}}, 201)
	must("POST", "/v1/suppressions", map[string]any{"email": "gone@example.net"}, 201)
	count := func() float64 {
		return must("GET", "/v1/audiences/"+aud+"/contacts", nil, 200)["contact_count"].(float64)
	}
	export, err := os.ReadFile("testdata/mailchimp_members.csv")
	if err != nil {
		t.Fatal(err)
	}

	v := newVisitor(t, a)
	v.signIn(a.Key)
	noAPIHint(t, v.get("/audiences/"+aud))
	p := v.upload("/audiences/"+aud+"/import", "subscribed_members_export.csv", string(export), v.csrf)
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/audiences/"+aud+"/uploads/upl_") {
		t.Fatalf("upload: %d %s %s", p.status, loc, p.body)
	}

	// The mapping page: the header, the first rows as written (quoted
	// commas kept), and a role proposed for every column.
	p = v.get(loc)
	want(t, p, http.StatusOK, "Import subscribed_members_export.csv", "5 rows", "1 Rue de la Paix, Paris, 75002, France", "O&#39;Brien, Jr.", `<th>OPTIN_TIME</th>`)
	noAPIHint(t, p)
	roles, fields := proposed(t, p.body)
	if len(roles) != 23 {
		t.Fatalf("%d columns on the page, want 23: %v", len(roles), roles)
	}
	for col, role := range map[string]string{"Email Address": "email", "First Name": "first_name", "Last Name": "last_name", "TAGS": "tags",
		"Phone Number": "attribute", "MEMBER_RATING": "attribute", "NOTES": "attribute"} {
		if roles[col] != role {
			t.Fatalf("%s is proposed as %q, want %q (all: %v)", col, roles[col], role, roles)
		}
	}
	form := func(change map[string]string) url.Values {
		f := url.Values{}
		for col, role := range roles {
			if c, ok := change[col]; ok {
				role = c
			}
			f.Set(fields[col], role)
		}
		return f
	}
	mapping := func() url.Values { return form(map[string]string{"Phone Number": "ignore"}) }

	// A mapping the import cannot follow is refused on the page, kept.
	want(t, v.post(loc+"/check", form(map[string]string{"Email Address": "attribute"})), http.StatusBadRequest, "Choose the column that holds the email address")
	want(t, v.post(loc+"/check", form(map[string]string{"NOTES": "first_name"})), http.StatusBadRequest, "Only one column can be First name, not &#34;First Name&#34; and &#34;NOTES&#34;")
	want(t, v.post(loc+"/check", form(map[string]string{"NOTES": "sneaky"})), http.StatusBadRequest, `Choose what column &#34;NOTES&#34; holds`)

	// The check: what would be created, updated, held back and refused;
	// nothing written.
	p = v.post(loc+"/check", mapping())
	want(t, p, http.StatusOK, "Checked: nothing was written yet", `<dd id="c-created">2</dd>`, `<dd id="c-updated">1</dd>`,
		`<dd id="c-held">1 `, `<dd id="c-refused">1</dd>`, "not-an-address", `id="import-run"`)
	noAPIHint(t, p)
	if r, _ := proposed(t, p.body); r["Phone Number"] != "ignore" {
		t.Fatalf("the check forgot the chosen role: %v", r)
	}
	checked := checkedField.FindStringSubmatch(p.body)[1]
	// Import with other columns than were checked: they are checked, not
	// imported.
	changed := form(map[string]string{"Phone Number": "ignore", "NOTES": "ignore"})
	changed.Set("checked", checked)
	want(t, v.post(loc+"/import", changed), http.StatusOK, `id="check-changed"`, "nothing was imported")
	if n := count(); n != 1 {
		t.Fatalf("the check wrote contacts: %v in the audience", n)
	}
	if r := must("GET", "/v1/contacts?lookup=ann@example.net", nil, 200)["contacts"].([]any); len(r) != 0 {
		t.Fatalf("the check created ann: %v", r)
	}

	// Another session does not see the upload.
	other := newVisitor(t, a)
	other.signIn(a.Key)
	want(t, other.get(loc), http.StatusNotFound)
	want(t, other.post(loc+"/import", mapping()), http.StatusNotFound)

	// The import follows the checked mapping.
	checkedMapping := mapping()
	checkedMapping.Set("checked", checked)
	p = v.post(loc+"/import", checkedMapping)
	job := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(job, "/audiences/"+aud+"/imports/imp_") {
		t.Fatalf("import: %d %s %s", p.status, job, p.body)
	}
	testapp.Eventually(t, 10*time.Second, func() bool { return strings.Contains(v.get(job).body, `id="import-report"`) }, "the import never reported")
	want(t, v.get(job), http.StatusOK, `<dd id="r-created">2</dd>`, `<dd id="r-skipped">1 `)
	if n := count(); n != 4 {
		t.Fatalf("%v contacts after the import, want 4 (carl, ann, bob, gone held back)", n)
	}
	ann := must("GET", "/v1/contacts?lookup=ann@example.net", nil, 200)["contacts"].([]any)[0].(map[string]any)
	if ann["first_name"] != "Ann" || ann["last_name"] != "Lee" || !slices.Equal(strs(ann["tags"]), []string{"customers", "vip"}) {
		t.Fatalf("ann: %v", ann)
	}
	bob := must("GET", "/v1/contacts?lookup=bob@example.net", nil, 200)["contacts"].([]any)[0].(map[string]any)
	if bob["first_name"] != "Bob" || bob["last_name"] != "O'Brien, Jr." || !slices.Equal(strs(bob["tags"]), []string{"newsletter"}) {
		t.Fatalf("bob: %v", bob)
	}
	for _, m := range must("GET", "/v1/audiences/"+aud+"/contacts", nil, 200)["contacts"].([]any) {
		m := m.(map[string]any)
		attrs := m["attributes"].(map[string]any)
		if _, ok := attrs["phone_number"]; ok {
			t.Fatalf("%s has the ignored column: %v", m["email"], attrs)
		}
		if m["email"] == "ann@example.net" && (attrs["Address"] != "1 Rue de la Paix, Paris, 75002, France" || attrs["NOTES"] != "Met at the fair, liked the demo" || attrs["MEMBER_RATING"] != "4") {
			t.Fatalf("ann's merge fields: %v", attrs)
		}
	}
	// Imported, the file is gone: neither its page nor a second import.
	want(t, v.get(loc), http.StatusNotFound)
	want(t, v.post(loc+"/import", mapping()), http.StatusNotFound)

	// A file whose address column has a name no exporter uses is not a
	// dead end: the person says which column it is.
	p = v.upload("/audiences/"+aud+"/import", "own.csv", "Adresse,Vorname\ndora@example.net,Dora\n", v.csrf)
	own := p.header.Get("Location")
	roles, fields = proposed(t, v.get(own).body)
	if roles["Adresse"] != "attribute" || roles["Vorname"] != "first_name" {
		t.Fatalf("own.csv proposed %v", roles)
	}
	want(t, v.post(own+"/check", url.Values{fields["Adresse"]: {"attribute"}, fields["Vorname"]: {"first_name"}}), http.StatusBadRequest, "Choose the column that holds the email address")
	want(t, v.post(own+"/check", url.Values{fields["Adresse"]: {"email"}, fields["Vorname"]: {"first_name"}}), http.StatusOK, `<dd id="c-created">1</dd>`)
	// Under another audience's path the upload is not found.
	other2 := must("POST", "/v1/audiences", map[string]any{"name": "Other"}, 201)["id"].(string)
	want(t, v.get(strings.Replace(own, aud, other2, 1)), http.StatusNotFound)
}

// importFile uploads a file to the audience and, on its mapping page,
// posts the proposed roles to step ("check": the check's page is the
// answer) or imports (the import's page is returned).
func (v *visitor) importFile(aud, filename, content, step string) page {
	v.t.Helper()
	p := v.upload("/audiences/"+aud+"/import", filename, content, v.csrf)
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/audiences/"+aud+"/uploads/") {
		v.t.Fatalf("upload: %d %s %s", p.status, loc, p.body)
	}
	roles, fields := proposed(v.t, v.get(loc).body)
	f := url.Values{}
	for col, role := range roles {
		f.Set(fields[col], role)
	}
	p = v.post(loc+"/check", f)
	if step == "check" {
		return p
	}
	f.Set("checked", checkedField.FindStringSubmatch(p.body)[1])
	p = v.post(loc+"/import", f)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/audiences/"+aud+"/imports/imp_") {
		v.t.Fatalf("import: %d %s %s", p.status, p.header.Get("Location"), p.body)
	}
	return p
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
