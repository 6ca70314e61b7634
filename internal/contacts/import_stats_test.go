package contacts_test

import (
	"fmt"
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testapp"
)

// TestImportRefreshesStatistics: an import of 1,000 new contacts or more
// has PostgreSQL re-read the tables' sizes after its answer, so the next
// import's lookups are not planned for the empty tables (SQLite keeps no
// statistics to refresh).
func TestImportRefreshesStatistics(t *testing.T) {
	a := testapp.Start(t)
	if a.DB.Dialect != store.Postgres {
		t.Skip("PostgreSQL's planner statistics")
	}
	var aud struct{ ID string }
	if r := a.Do("POST", "/v1/audiences", map[string]any{"name": "bulk"}); r.Status != 201 {
		t.Fatalf("audience: %d %s", r.Status, r.Body)
	} else {
		r.Decode(t, &aud)
	}
	rows := make([]map[string]any, 1200)
	for i := range rows {
		rows[i] = map[string]any{"email": fmt.Sprintf("bulk%d@example.com", i)}
	}
	if r := a.Do("POST", "/v1/audiences/"+aud.ID+"/contacts", rows); r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	counted := func() float64 {
		var n float64
		if err := a.DB.QueryRow(t.Context(), `SELECT reltuples FROM pg_class WHERE relname = 'contacts'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testapp.Eventually(t, 20*time.Second, func() bool { return counted() >= 1200 }, "pg_class counts %v contacts", counted())
}
