package app_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mailroom/internal/testkit/testdb"
)

// owners maps every table to the one area (package under internal/) that
// holds its SQL; another area calls that package instead of writing SQL on
// the table (docs/decisions.md, "One owner per table").
var owners = map[string]string{
	"workspaces":           "workspaces",
	"api_keys":             "workspaces",
	"domains":              "domains",
	"domain_keys":          "domains",
	"service_keys":         "domains",
	"mailboxes":            "inbound",
	"inbound_provisioned":  "inbound",
	"messages":             "inbound",
	"message_bookings":     "inbound",
	"message_parts":        "inbound",
	"message_raw":          "inbound",
	"messages_search":      "inbound", // FTS5 table on SQLite; on PostgreSQL the GIN index of messages.search_vector (store.DB.TextSearch)
	"threads":              "inbound",
	"emails":               "sending",
	"idempotency_keys":     "sending",
	"email_message_ids":    "sending",
	"outbound_messages":    "delivery",
	"email_attempts":       "delivery",
	"captured_emails":      "capture",
	"events":               "events",
	"suppressions":         "suppressions",
	"webhooks":             "webhooks",
	"webhook_deliveries":   "webhooks",
	"webhook_attempts":     "webhooks",
	"templates":            "templates",
	"template_versions":    "templates",
	"contacts":             "contacts",
	"audiences":            "contacts",
	"memberships":          "contacts",
	"automation_events":    "contacts",
	"contact_properties":   "contacts",
	"contact_imports":      "contacts",
	"contacts_search":      "contacts", // SQLite's FTS5 trigram index of contacts.search (store.DB.ContainsIndexed)
	"topics":               "topics",
	"topic_preferences":    "topics",
	"analytics_cells":      "analytics",
	"analytics_days":       "analytics",
	"email_tracking":       "tracking",
	"link_clicks":          "tracking",
	"policy_counters":      "policy",
	"policy_holds":         "policy",
	"policy_version":       "policy",
	"ips":                  "policy",
	"segments":             "segments",
	"broadcasts":           "broadcasts",
	"broadcast_recipients": "broadcasts",
	"automations":          "automations",
	"automation_versions":  "automations",
	"automation_runs":      "automations",
	"automation_run_steps": "automations",
	"custom_events":        "automations",
	"dashboard_links":      "dashboard",
	"dashboard_sessions":   "dashboard",
	"dashboard_uploads":    "dashboard",
	"dashboard_imports":    "dashboard",
	"email_bodies":         "sending",
	"email_shared":         "sending",
	"nodes":                "store", // the cluster's heartbeat rows (store.DB.Beat), the store's own machinery
	"cluster_settings":     "store",
	"request_logs":         "requestlog",
}

// crossings are the accesses still made outside the owner, each with why;
// the test fails when one disappears, so the list only shrinks.
var crossings = map[string]string{}

// reads are the statements of one area that read another area's table,
// each with why. Owning a table is writing it and saying what its rows
// mean; a read named here is the reader's own statement, and the literal
// holding it must not write the table (INTO, UPDATE, DELETE FROM). The
// test fails when one disappears, so the list only shrinks.
var reads = map[string]string{
	"contacts/store.go suppressions":      "PeopleQuery, the one selection of people, leaves out or marks the suppressed (docs/architecture.md, \"One selection builder\")",
	"contacts/store.go topic_preferences": "PeopleQuery leaves out or marks those opted out of the mail's topic, and reads the segment rule `topic`",
	"contacts/store.go topics":            "PeopleQuery's segment rule `topic` names a topic by key or id",
	"events/events.go emails":             "an email event raised with DataIsEmail stores no data: its reads build it from the email row (emailDataOf)",
	"events/events.go email_shared":       "the same: an email row stores its From and tags in email_shared when many emails share them (00123)",
}

var (
	tableRef = regexp.MustCompile(`(?i)\b(?:from|into|update|join)\s+([a-z_]+)\b`)
	writeRef = regexp.MustCompile(`(?i)\b(?:into|update|delete\s+from)\s+([a-z_]+)\b`)
)

// literalTables names the known tables a string literal's SQL reads or
// writes: after FROM, INTO, UPDATE or JOIN anywhere in it, so a fragment
// ("EXISTS (SELECT 1 FROM emails …)", " FROM " + table) counts as SQL as
// much as a whole statement does.
func literalTables(lit *ast.BasicLit) []string { return literalRefs(lit, tableRef) }

// literalWrites names the known tables a string literal's SQL writes:
// after INTO, UPDATE or DELETE FROM.
func literalWrites(lit *ast.BasicLit) []string { return literalRefs(lit, writeRef) }

// literalRefs names the known tables ref finds in a string literal.
func literalRefs(lit *ast.BasicLit, ref *regexp.Regexp) []string {
	if lit.Kind != token.STRING {
		return nil
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range ref.FindAllStringSubmatch(s, -1) {
		if t := strings.ToLower(m[1]); owners[t] != "" {
			out = append(out, t)
		}
	}
	return out
}

// ownerViolations lists SQL on a table outside its owner (or a listed
// crossing or read) in the packages under root; seen collects the
// crossings and reads met.
func ownerViolations(t *testing.T, root string, seen map[string]bool) []string {
	var out []string
	eachFileIn(t, root, func(pkg, rel string, f *ast.File) {
		if pkg == "store" || strings.HasPrefix(pkg, "testkit") {
			return // the store's machinery names tables only in comments and generic code
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok {
				return true
			}
			for _, table := range literalTables(lit) {
				if owner := owners[table]; owner != pkg {
					key := rel + " " + table
					if _, ok := crossings[key]; ok {
						seen[key] = true
						continue
					}
					if _, ok := reads[key]; ok && !slices.Contains(literalWrites(lit), table) {
						seen[key] = true
						continue
					}
					out = append(out, fmt.Sprintf("%s: SQL on %s, which %s owns; call the %s package instead", rel, table, owner, owner))
				}
			}
			return true
		})
	})
	return out
}

// TestEachTableHasOneOwner: SQL naming a table appears only in the package
// that owns it, or in a listed crossing or read (which never writes).
func TestEachTableHasOneOwner(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range ownerViolations(t, "..", seen) {
		t.Error(v)
	}
	for key := range crossings {
		if !seen[key] {
			t.Errorf("crossing %q no longer occurs: remove it from the list", key)
		}
	}
	for key := range reads {
		if !seen[key] {
			t.Errorf("read %q no longer occurs: remove it from the list", key)
		}
	}
}

// TestOwnersListEveryTable: every table the migrations leave is in the
// owner map, so a new table cannot escape TestEachTableHasOneOwner by
// being missing from it. River's and goose's tables and SQLite's FTS5
// shadow tables are the libraries' own.
func TestOwnersListEveryTable(t *testing.T) {
	if testdb.IsPostgres() {
		t.Skip("the migrations are the same on both; SQLite's catalogue is read")
	}
	rows, err := testdb.Open(t).Column(context.Background(), `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, fmt.Sprint(r))
	}
	virtual := map[string]bool{}
	for _, n := range names {
		if _, ok := owners[n]; ok && strings.HasSuffix(n, "_search") {
			virtual[n] = true
		}
	}
	for _, n := range names {
		shadow := false
		for v := range virtual {
			shadow = shadow || strings.HasPrefix(n, v+"_")
		}
		if shadow || strings.HasPrefix(n, "river_") || n == "goose_db_version" {
			continue
		}
		if _, ok := owners[n]; !ok {
			t.Errorf("table %s has no owner in the owner map: add it with the one area that writes it", n)
		}
	}
	if len(names) < len(owners) {
		t.Fatalf("read only %d tables", len(names))
	}
}

// sqlFileViolations lists the packages under root whose SQL (literals
// naming a table, literalTables) is in more than one file.
func sqlFileViolations(t *testing.T, root string) (out []string, packages int) {
	files := map[string]map[string]bool{}
	eachFileIn(t, root, func(pkg, rel string, f *ast.File) {
		if pkg == "store" || strings.HasPrefix(pkg, "testkit") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && len(literalTables(lit)) > 0 {
				if files[pkg] == nil {
					files[pkg] = map[string]bool{}
				}
				files[pkg][rel] = true
			}
			return true
		})
	})
	for pkg, fs := range files {
		if len(fs) > 1 {
			out = append(out, fmt.Sprintf("%s has SQL in %d files %v: keep it in one (the area's store.go)", pkg, len(fs), slices.Sorted(maps.Keys(fs))))
		}
	}
	return out, len(files)
}

// TestEachAreaKeepsItsSQLInOneFile: a package's SQL statements are all in
// one file (its store), so a reader finds every query of an area in one
// place. The store package's machinery and the test kit are exempt.
func TestEachAreaKeepsItsSQLInOneFile(t *testing.T) {
	out, n := sqlFileViolations(t, "..")
	if n < 5 {
		t.Fatalf("found SQL in only %d packages; is the pattern still right?", n)
	}
	for _, v := range out {
		t.Error(v)
	}
}

// eachFile parses every non-test Go file of the packages under internal/.
func eachFile(t *testing.T, fn func(pkg, rel string, f *ast.File)) {
	t.Helper()
	if n := eachFileIn(t, "..", fn); n < 50 {
		t.Fatalf("parsed only %d files under internal/; is the test running from internal/app?", n)
	}
}

// eachFileIn parses every non-test Go file under root, naming each file
// by its path below root and its package by its directory.
func eachFileIn(t *testing.T, root string, fn func(pkg, rel string, f *ast.File)) int {
	t.Helper()
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		n++
		fn(filepath.ToSlash(filepath.Dir(rel)), rel, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
