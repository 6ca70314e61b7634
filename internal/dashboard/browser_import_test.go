package dashboard_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/testapp"
)

// mappingShot is where TestImportMappingInBrowser leaves a picture of the
// mapping step, for a person to look at.
const mappingShot = "/tmp/import-mapping.png"

// TestImportMappingInBrowser imports a Mailchimp export in headless
// Chromium as a person would: choose the file, read the proposed columns,
// set one to ignore, check, then import and read the report.
func TestImportMappingInBrowser(t *testing.T) {
	b := browser.Start(t)
	a := testapp.Start(t)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "Readers"}).JSON()["id"].(string)
	if r := a.Do("POST", "/v1/suppressions", map[string]any{"email": "gone@example.net"}); r.Status != 201 {
		t.Fatalf("suppress: %d %s", r.Status, r.Body)
	}
	export, err := filepath.Abs("testdata/mailchimp_members.csv")
	if err != nil {
		t.Fatal(err)
	}
	b.Open(t, a.URL+"/sign-in")
	b.WaitText(t, "Workspace API key")
	b.Do(t, chromedp.SendKeys(chromedp.CSS("#key"), a.Key))
	b.Click(t, "#sign-in")
	b.WaitText(t, "Last 30 days")

	b.Open(t, a.URL+"/audiences/"+aud)
	b.WaitText(t, "Import contacts from a CSV file")
	b.Do(t, chromedp.SetUploadFiles(chromedp.CSS("#import-file"), []string{export}))
	b.Click(t, "#import-contacts")
	b.WaitText(t, "First rows")
	if text := browser.Eval[string](t, b, "document.querySelector('main').innerText"); strings.Contains(text, "API") {
		t.Fatalf("the mapping page mentions the API:\n%s", text)
	}
	role := func(col string) string {
		return browser.Eval[string](t, b, "document.querySelector(`select[data-column=\""+col+"\"]`).value")
	}
	for col, want := range map[string]string{"Email Address": "email", "First Name": "first_name", "Last Name": "last_name", "TAGS": "tags", "Phone Number": "attribute"} {
		if got := role(col); got != want {
			t.Fatalf("%s is proposed as %q, want %q", col, got, want)
		}
	}
	fitsPhone(t, b)
	b.Screenshot(t, mappingShot)
	t.Logf("the mapping step: %s", mappingShot)

	b.Do(t, chromedp.SetValue(chromedp.CSS(`select[data-column="Phone Number"]`), "ignore"))
	b.Click(t, "#import-check")
	b.WaitText(t, "Checked: nothing was written yet")
	counts := func(ids ...string) map[string]string {
		m := map[string]string{}
		for _, id := range ids {
			m[id] = strings.Fields(browser.Eval[string](t, b, "document.querySelector('#"+id+"').textContent"))[0]
		}
		return m
	}
	if c := counts("c-created", "c-held", "c-refused"); c["c-created"] != "3" || c["c-held"] != "1" || c["c-refused"] != "1" {
		t.Fatalf("check %v:\n%s", c, b.Text(t))
	}
	if !strings.Contains(browser.Eval[string](t, b, "document.querySelector('#check-errors').textContent"), "not-an-address") {
		t.Fatal("the refused row is not listed")
	}
	if role("Phone Number") != "ignore" {
		t.Fatal("the check forgot the chosen role")
	}
	if n := a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).JSON()["contact_count"]; n != float64(0) {
		t.Fatalf("the check wrote %v contacts", n)
	}

	b.Click(t, "#import-run")
	b.WaitText(t, "Import: mailchimp_members.csv")
	b.WaitText(t, "Imported")
	if c := counts("r-created", "r-held", "r-skipped"); c["r-created"] != "3" || c["r-held"] != "1" || c["r-skipped"] != "1" {
		t.Fatalf("report %v:\n%s", c, b.Text(t))
	}
	ann := a.Do("GET", "/v1/contacts?lookup=ann@example.net", nil).JSON()["contacts"].([]any)[0].(map[string]any)
	if ann["first_name"] != "Ann" || !slices.Equal(strs(ann["tags"]), []string{"customers", "vip"}) {
		t.Fatalf("ann: %v", ann)
	}
	for _, m := range a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).JSON()["contacts"].([]any) {
		if _, ok := m.(map[string]any)["attributes"].(map[string]any)["phone_number"]; ok {
			t.Fatalf("the ignored column was imported: %v", m)
		}
	}
}
