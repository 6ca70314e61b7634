package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testapp"
)

// TestImportSurvivesKill: a CSV import answered by the dashboard is
// committed with the job that imports it, so `mailroom serve` killed with
// SIGKILL right after the answer imports every row once it runs again.
func TestImportSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	t.Parallel()
	node := binary.Start(t)
	key := node.Workspace("Acme", "owner@acme.test")
	aud := node.Call(key, "POST", "/v1/audiences", map[string]any{"name": "Members"})["id"].(string)

	v := newVisitor(t, &testapp.App{URL: "http://" + node.Addr})
	v.signIn(key)
	want(t, v.get("/audiences/"+url.PathEscape(aud)), http.StatusOK)
	const n = 5000
	var csv strings.Builder
	csv.WriteString("email,first_name\n")
	for i := range n {
		fmt.Fprintf(&csv, "member%d@example.org,M%d\n", i, i)
	}
	p := v.importFile(aud, "members.csv", csv.String(), "") // upload, mapping page, import
	page := p.header.Get("Location")
	node.Kill()
	node.Restart()

	imported := regexp.MustCompile(`id="r-imported">(\d+)<`)
	testapp.Eventually(t, 30*time.Second, func() bool {
		return imported.MatchString(v.get(page).body)
	}, "the import never reported after the restart: %s", node.Logs)
	if m := imported.FindStringSubmatch(v.get(page).body); m[1] != fmt.Sprint(n) {
		t.Fatalf("imported %s of %d", m[1], n)
	}
	// Every member is there once.
	got := node.Call(key, "GET", "/v1/audiences/"+aud+"/contacts?limit=1", nil)
	if fmt.Sprint(got["contact_count"]) != fmt.Sprint(n) {
		t.Fatalf("the audience has %v members after the restart, want %d", got["contact_count"], n)
	}
}
