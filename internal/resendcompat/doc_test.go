package resendcompat_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestResendDocTable: docs/resend.md has a row for every call of both SDKs'
// tests, and each row's status agrees with nodeUnsupported/goUnsupported
// (works, or not yet/not offered as the list's reason begins).
func TestResendDocTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/resend.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	node, gosdk, ok := strings.Cut(doc, "## Go SDK")
	if !ok {
		t.Fatal("docs/resend.md has no Go SDK section")
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| [^|]* \\| ([^|]*) \\|")
	check := func(section, name string, calls []string, unsupported map[string]string) {
		status := map[string]string{}
		for _, m := range row.FindAllStringSubmatch(section, -1) {
			status[m[1]] = strings.Trim(strings.TrimSpace(m[2]), "*")
		}
		for _, c := range calls {
			want := "works"
			if reason, ok := unsupported[c]; ok {
				want, _, _ = strings.Cut(reason, ":")
			}
			if got, ok := status[c]; !ok {
				t.Errorf("%s: docs/resend.md has no row for %s", name, c)
			} else if got != want {
				t.Errorf("%s: docs/resend.md says %s is %q; the tests say %q", name, c, got, want)
			}
			delete(status, c)
		}
		for c := range status {
			t.Errorf("%s: docs/resend.md has a row for %s, which the tests do not call", name, c)
		}
	}
	check(node, "Node SDK", nodeCalls(t), nodeUnsupported)
	check(gosdk, "Go SDK", goCallNames(t), goUnsupported)
}

// nodeCalls are the calls calls.mjs makes, read from its table.
func nodeCalls(t *testing.T) []string {
	b, err := os.ReadFile("testdata/node/calls.mjs")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  \["([^"]+)",`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	if len(out) < 100 {
		t.Fatalf("read %d calls from calls.mjs", len(out))
	}
	return out
}

// goCallNames are the calls TestGoSDK makes, read from its table.
func goCallNames(t *testing.T) []string {
	b, err := os.ReadFile("go_sdk_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`\{"([A-Z][A-Za-z.{}]+)", func`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	if len(out) < 50 {
		t.Fatalf("read %d calls from go_sdk_test.go", len(out))
	}
	return out
}
