package app_test

import (
	"fmt"
	"go/ast"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers is docs/architecture.md's code map as a table: every package under
// internal/ and its layer. A package imports only packages of its own layer
// or below; a package missing here fails the test, so a new one is placed
// on purpose.
var layers = map[string]int{
	"mcpserver": layerClient,
	"listen":    layerEntry, // `mailroom listen`: a client of the event stream that signs as webhooks do
	"app":       layerRoot,
	// entry points
	"httpapi": layerEntry, "smtpin": layerEntry, "dashboard": layerEntry, "submission": layerEntry,
	// services
	"sending": layerService, "delivery": layerService, "domains": layerService, "webhooks": layerService,
	"workspaces": layerService, "suppressions": layerService, "events": layerService, "templates": layerService,
	"render": layerService, "contacts": layerService, "rules": layerService, "segments": layerService,
	"broadcasts": layerService, "requestlog": layerService, "inbound": layerService, "automations": layerService,
	"topics": layerService, "tracking": layerService, "analytics": layerService, "policy": layerService,
	"retention": layerService, "capture": layerService, "contentcheck": layerService,
	// infrastructure
	"store": layerInfra, "jobs": layerInfra, "outbound": layerInfra, "groupcommit": layerInfra, "bounce": layerInfra,
	"mailauth": layerInfra, "msglimit": layerInfra, "dnsresolve": layerInfra, "netpolicy": layerInfra,
	"ratelimit": layerInfra, "smtplimit": layerInfra, "bodylimit": layerInfra, "diskguard": layerInfra,
	"secretbox": layerInfra, "libcrypto": layerInfra, "version": layerInfra, "mailmetrics": layerInfra,
	"tracing": layerInfra,
	// the vocabulary every layer shares
	"apierr": layerBase, "ids": layerBase, "clock": layerBase, "config": layerBase,
	"testsignal": layerBase, // code tells a test it reached a point; inert until a test calls Init
	// tests' own packages (no production code imports them)
	"testkit": layerTest, "e2e": layerTest, "resendcompat": layerTest,
}

const (
	layerBase = iota
	layerInfra
	layerService
	layerEntry
	layerRoot
	layerClient // talks to a node over HTTP only: imports no other layer
	layerTest
)

// upward are the imports that go up a layer, each with why; the test fails
// when one disappears, so the list only shrinks.
var upward = map[string]string{
	"inbound → smtpin": "inbound implements smtpin.Router and takes its Envelope: the listener declares the interface it calls",
	"sending → smtpin": "the autoreply@ scenario hands its reply to the inbound route as smtpin would (smtpin.Recipient, Envelope)",
}

// httpClients are the service files that make HTTP requests (and so import
// net/http); no other service file may: services answer apierr errors and
// domain results, and the handler picks the status.
var httpClients = []string{"webhooks/client.go", "automations/service.go"}

// layerViolations checks the packages under root against layers.
func layerViolations(t *testing.T, root string, seen map[string]bool) []string {
	var out []string
	found := map[string]bool{}
	eachFileIn(t, root, func(pkg, rel string, f *ast.File) {
		top, _, _ := strings.Cut(pkg, "/")
		found[top] = true
		from, ok := layers[top]
		if !ok {
			return
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "net/http" && from == layerService && !slices.Contains(httpClients, rel) {
				out = append(out, fmt.Sprintf("%s imports net/http: a service returns apierr errors and domain results; the handler picks the HTTP status", rel))
			}
			dep, ok := strings.CutPrefix(path, "mailroom/internal/")
			if !ok {
				continue
			}
			dep, _, _ = strings.Cut(dep, "/")
			to, known := layers[dep]
			switch {
			case !known || dep == top:
			case from == layerClient || (to > from && to != layerTest) || (to == layerTest && from != layerTest):
				key := top + " → " + dep
				if _, ok := upward[key]; ok && from != layerClient {
					seen[key] = true
					continue
				}
				out = append(out, fmt.Sprintf("%s imports %s: %s is below it in the code map (docs/architecture.md)", rel, dep, top))
			}
		}
	})
	for pkg := range found {
		if _, ok := layers[pkg]; !ok {
			out = append(out, fmt.Sprintf("package %s is not in the layers table: place it in the code map", pkg))
		}
	}
	return out
}

// TestLayers: imports point down the code map, every package is placed in
// it, and services leave HTTP to the entry points.
func TestLayers(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range layerViolations(t, "..", seen) {
		t.Error(v)
	}
	for key := range upward {
		if !seen[key] {
			t.Errorf("upward import %q no longer occurs: remove it from the list", key)
		}
	}
}

// TestRulesFailWhenBroken runs each code rule on a deliberately broken copy
// of a tree and sees it fail: SQL on another area's table (a fragment, not
// a statement; a listed read that writes), an area's SQL in two files, a service importing an entry
// point and net/http, and an unplaced package.
func TestRulesFailWhenBroken(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sending/store.go", "package sending\n\nconst q = `INSERT INTO emails (id) VALUES (?)`\n")
	write("sending/veto.go", "package sending\n\nconst veto = `AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.email = e.email)`\n")
	write("delivery/store.go", "package delivery\n\nimport (\n\t\"net/http\"\n\n\t\"mailroom/internal/httpapi\"\n)\n\nvar _ = http.StatusOK\nvar _ = httpapi.NewHandler\n")
	write("newarea/newarea.go", "package newarea\n")
	// A listed read (contacts/store.go on suppressions) that writes.
	write("contacts/store.go", "package contacts\n\nconst q = `DELETE FROM suppressions WHERE email = ?`\n")

	got := map[string]bool{}
	for _, v := range ownerViolations(t, root, map[string]bool{}) {
		got["owner: "+v] = true
	}
	files, _ := sqlFileViolations(t, root)
	for _, v := range files {
		got["files: "+v] = true
	}
	for _, v := range layerViolations(t, root, map[string]bool{}) {
		got["layers: "+v] = true
	}
	for _, want := range []string{
		"owner: sending/veto.go: SQL on suppressions",
		"owner: contacts/store.go: SQL on suppressions",
		"files: sending has SQL in 2 files",
		"layers: delivery/store.go imports net/http",
		"layers: delivery/store.go imports httpapi",
		"layers: package newarea is not in the layers table",
	} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(got)), func(v string) bool { return strings.HasPrefix(v, want) }) {
			t.Errorf("the broken copy did not fail with %q; got %v", want, slices.Sorted(maps.Keys(got)))
		}
	}
}
