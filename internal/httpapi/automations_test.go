package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// The definition of the contract, comments and key order included.
const onboarding = `name: Trial onboarding            # required
trigger:                          # required
  event: tag.added
  tag: trial
steps:
  - send:
      template: welcome
      from: Acme <hi@acme.test>
      topic: product-news
  - wait: 2d
  - if: { field: attributes.plan, op: eq, value: pro }
    then: [ { tag: { add: [pro-onboarding] } } ]
    else: [ { exit: lost-interest } ]
  - tag: { add: [onboarded], remove: [trial] }
`

const apiFlow = "name: API flow\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n"

func yamlCase(name, method, path, body, ct string, status int, code string) sc {
	return sc{Name: name, Method: method, Path: path, Body: body, Header: map[string]string{"Content-Type": ct}, Status: status, Code: code}
}

func TestAutomationRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s.Set("other", otherKey)
	if r := a.Do("POST", "/v1/templates", map[string]any{"name": "Welcome", "text": "Hi {{email}}", "publish": true}); r.Status != 201 {
		t.Fatalf("template: %d %s", r.Status, r.Body)
	}
	r := a.Do("POST", "/v1/audiences", map[string]any{"name": "Newsletter"})
	if r.Status != 201 {
		t.Fatalf("audience: %d %s", r.Status, r.Body)
	}
	s.Set("aud", r.JSON()["id"].(string))
	apiFlowV2 := strings.Replace(apiFlow, "1h", "2h", 1)

	s.Run(t,
		// Create from raw YAML: answered as written, version 1, enabled.
		sc{Name: "create raw yaml", Method: "POST", Path: "/v1/automations", Body: onboarding, Header: map[string]string{"Content-Type": "application/yaml"},
			Status: 201, Shape: shape{"id": scenario.Prefix("auto_"), "name": "Trial onboarding", "slug": "trial-onboarding", "trigger": "tag.added",
				"enabled": true, "version": 1, "yaml": onboarding, "last_error": nil, "trigger_url": nil,
				"graph": shape{"nodes": scenario.Len(7), "edges": []any{
					shape{"from": "trigger", "to": "s1"}, shape{"from": "s1", "to": "s2"}, shape{"from": "s2", "to": "s3"},
					shape{"from": "s3", "to": "s4", "label": "then"}, shape{"from": "s3", "to": "s5", "label": "else"},
					shape{"from": "s4", "to": "s6"}}}},
			Save: map[string]string{"aut": "id"}},
		sc{Name: "create { yaml } as JSON", Method: "POST", Path: "/v1/automations", Body: map[string]any{"yaml": apiFlow},
			Status: 201, Shape: shape{"trigger": "api.call", "slug": "api-flow", "yaml": apiFlow, "version": 1},
			Check: func(t testing.TB, r *testapp.Response) {
				id := r.JSON()["id"].(string)
				if got := r.JSON()["trigger_url"]; got != a.Config.PublicURL+"/v1/automations/"+id+"/trigger" {
					t.Errorf("trigger_url %v", got)
				}
			}, Save: map[string]string{"api": "id"}},
		yamlCase("create text/plain", "POST", "/v1/automations", strings.Replace(apiFlow, "API flow", "Plain", 1), "text/plain; charset=utf-8", 201, ""),
		yamlCase("form encoding refused", "POST", "/v1/automations", "yaml=x", "application/x-www-form-urlencoded", 400, "invalid_request"),
		sc{Name: "json without yaml", Method: "POST", Path: "/v1/automations", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "json with unknown field", Method: "POST", Path: "/v1/automations", Body: map[string]any{"yaml": apiFlow, "x": 1}, Status: 400, Code: "invalid_request"},

		// Refusals: every problem, the first in error.line and error.field.
		sc{Name: "every problem reported", Method: "POST", Path: "/v1/automations", Header: map[string]string{"Content-Type": "application/yaml"},
			Body:   "name: x\ntrigger: { event: api.call }\nsteps:\n  - wait: 2 days\n  - send: { template: nope, from: a@b.test }\n  - wait: -1h\n",
			Status: 400, Code: "invalid_automation",
			Shape: shape{"error": shape{"line": 4, "field": "steps[0].wait", "message": scenario.Prefix("3 problems; the first: steps[0].wait: \"2 days\" is not a duration (line 4)"),
				"next": scenario.Prefix("Write 2d"),
				"problems": []any{shape{"field": "steps[0].wait", "line": 4}, shape{"field": "steps[1].send.template", "line": 5, "fix": scenario.Prefix("Create the template first")},
					shape{"field": "steps[2].wait", "line": 6}}}}},
		sc{Name: "unknown audience", Method: "POST", Path: "/v1/automations", Header: map[string]string{"Content-Type": "text/yaml"},
			Body:   "name: x\ntrigger:\n  event: member.subscribed\n  audience_id: aud_nope\nsteps: [ { wait: 1h } ]\n",
			Status: 400, Code: "invalid_automation", Shape: shape{"error": shape{"field": "trigger.audience_id", "line": 2}}},
		yamlCase("known audience", "POST", "/v1/automations", "name: Subscribed\ntrigger:\n  event: member.subscribed\n  audience_id: {aud}\nsteps: [ { wait: 1h } ]\n", "text/yaml", 201, ""),
		sc{Name: "template of another workspace", Method: "POST", Path: "/v1/automations", Key: "{other}", Header: map[string]string{"Content-Type": "text/yaml"},
			Body: onboarding, Status: 400, Code: "invalid_automation", Shape: shape{"error": shape{"field": "steps[0].send.template", "line": 7}}},
		yamlCase("tabs", "POST", "/v1/automations", "name: x\ntrigger:\n\tevent: api.call\nsteps: [ { wait: 1h } ]\n", "text/yaml", 400, "invalid_automation"),
		yamlCase("bomb", "POST", "/v1/automations", bomb(), "text/yaml", 400, "invalid_automation"),
		yamlCase("megabyte", "POST", "/v1/automations", apiFlow+"# "+strings.Repeat("x", 1<<20)+"\n", "text/yaml", 400, "invalid_automation"),
		yamlCase("over two megabytes", "POST", "/v1/automations", strings.Repeat("#", 3<<20), "text/yaml", 413, "request_too_large"),
		yamlCase("10000 steps", "POST", "/v1/automations", "name: x\ntrigger: { event: api.call }\nsteps:\n"+strings.Repeat("  - wait: 1h\n", 10000), "text/yaml", 400, "invalid_automation"),
		yamlCase("loop through an alias", "POST", "/v1/automations", "name: x\ntrigger: { event: api.call }\nsteps:\n  - &l\n    if: { field: tag, op: has, value: a }\n    then: [ *l ]\n", "text/yaml", 400, "invalid_automation"),
		yamlCase("not utf-8", "POST", "/v1/automations", "name: \xff\n", "text/yaml", 400, "invalid_automation"),

		// Reads.
		sc{Name: "list", Method: "GET", Path: "/v1/automations", Status: 200,
			Shape: shape{"automations": scenario.Each(shape{"id": scenario.Prefix("auto_"), "version": 1, "last_error": nil, "yaml": scenario.Absent})},
			Check: func(t testing.TB, r *testapp.Response) {
				if n := len(r.JSON()["automations"].([]any)); n != 4 {
					t.Errorf("%d automations", n)
				}
			}},
		sc{Name: "get by slug", Method: "GET", Path: "/v1/automations/trial-onboarding", Status: 200, Shape: shape{"id": scenario.Var("aut"), "yaml": onboarding}},
		sc{Name: "other workspace sees nothing", Method: "GET", Path: "/v1/automations/{aut}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "yaml as stored", Method: "GET", Path: "/v1/automations/{aut}.yaml", Status: 200, Check: func(t testing.TB, r *testapp.Response) {
			if string(r.Body) != onboarding || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/yaml") ||
				r.Header.Get("x-svc-automation-version") != "1" || r.Header.Get("X-Mailroom-Automation-Version") != "1" {
				t.Errorf("%v %q", r.Header, r.Body)
			}
		}},
		sc{Name: "yaml of a missing one", Method: "GET", Path: "/v1/automations/aut_nope.yaml", Status: 404, Code: "not_found"},

		// New versions: PUT .yaml, PATCH yaml; the same YAML writes none.
		sc{Name: "put yaml", Method: "PUT", Path: "/v1/automations/{api}.yaml", Body: apiFlowV2, Header: map[string]string{"Content-Type": "application/yaml"},
			Status: 200, Check: func(t testing.TB, r *testapp.Response) {
				if string(r.Body) != apiFlowV2 || r.Header.Get("x-svc-automation-version") != "2" {
					t.Errorf("%v %q", r.Header, r.Body)
				}
			}},
		yamlCase("put invalid", "PUT", "/v1/automations/{api}.yaml", "name: x\n", "application/yaml", 400, "invalid_automation"),
		yamlCase("put without .yaml", "PUT", "/v1/automations/{api}", apiFlow, "application/yaml", 404, "not_found"),
		sc{Name: "patch same yaml writes no version", Method: "PATCH", Path: "/v1/automations/{api}", Body: map[string]any{"yaml": apiFlowV2}, Status: 200, Shape: shape{"version": 2}},
		sc{Name: "patch yaml", Method: "PATCH", Path: "/v1/automations/{api}", Body: map[string]any{"yaml": apiFlow + "  - exit: done\n"}, Status: 200,
			Shape: shape{"version": 3, "graph": shape{"nodes": scenario.Len(3)}}},
		sc{Name: "disable", Method: "PATCH", Path: "/v1/automations/{api}", Body: map[string]any{"enabled": false}, Status: 200, Shape: shape{"enabled": false, "version": 3}},
		sc{Name: "patch nothing", Method: "PATCH", Path: "/v1/automations/{api}", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "patch invalid yaml", Method: "PATCH", Path: "/v1/automations/{api}", Body: map[string]any{"yaml": "steps: 3\n", "enabled": true}, Status: 400, Code: "invalid_automation"},
		sc{Name: "versions", Method: "GET", Path: "/v1/automations/{api}/versions", Status: 200,
			Shape: shape{"automation_id": scenario.Var("api"), "version": 3, "enabled": scenario.Absent,
				"versions": []any{shape{"version": 3}, shape{"version": 2, "yaml": apiFlowV2}, shape{"version": 1, "yaml": apiFlow, "id": scenario.Prefix("autv_")}}},
			Save: map[string]string{"v1": "versions.2.id"}},
		sc{Name: "restore version 1", Method: "POST", Path: "/v1/automations/{api}/versions", Body: map[string]any{"version_id": "{v1}"}, Status: 201,
			Shape: shape{"version": 4, "yaml": apiFlow, "enabled": false}},
		sc{Name: "restore unknown", Method: "POST", Path: "/v1/automations/{api}/versions", Body: map[string]any{"version_id": "autv_nope"}, Status: 404, Code: "not_found"},
		sc{Name: "restore without id", Method: "POST", Path: "/v1/automations/{api}/versions", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "restore another automation's version", Method: "POST", Path: "/v1/automations/{aut}/versions", Body: map[string]any{"version_id": "{v1}"}, Status: 404, Code: "not_found"},

		// Delete.
		sc{Name: "delete", Method: "DELETE", Path: "/v1/automations/{api}", Status: 200, Shape: shape{"deleted": scenario.Var("api")}},
		sc{Name: "deleted is gone", Method: "GET", Path: "/v1/automations/{api}", Status: 404, Code: "not_found"},
		sc{Name: "delete again", Method: "DELETE", Path: "/v1/automations/{api}", Status: 404, Code: "not_found"},
		sc{Name: "unknown route in the family", Method: "GET", Path: "/v1/automations/{aut}/nope", Status: 404, Code: "not_found"},
	)
}

func bomb() string {
	var b strings.Builder
	b.WriteString("name: bomb\ntrigger: { event: api.call }\nsteps:\n  - set:\n      a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for i := 0; i < 9; i++ {
		n := fmt.Sprintf("b%d", i)
		fmt.Fprintf(&b, "      %s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	return b.String()
}

// Hostile YAML is refused quickly, never with a 500; 10 at once to see
// that none holds the server.
func TestAutomationHostileYAMLBounded(t *testing.T) {
	a := testapp.Start(t)
	bodies := []string{bomb(), strings.Repeat("[", 1<<20), strings.Repeat("- ", 1<<19), strings.Repeat("a: &a\n", 20000),
		"name: x\ntrigger: { event: api.call }\nsteps:\n" + strings.Repeat("  - wait: 1h\n", 10000)}
	for i, body := range bodies {
		start := time.Now()
		req, _ := http.NewRequest("POST", a.URL+"/v1/automations", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/yaml")
		req.Header.Set("Authorization", "Bearer "+a.Key)
		r := a.Send(req)
		if r.Status != 400 || r.ErrCode() != "invalid_automation" {
			t.Errorf("body %d: %d %s", i, r.Status, r.Body)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("body %d took %v", i, el)
		}
	}
}

// TestAutomationIDs: automations are handed out as auto_, as the contract
// names them; an automation made before, whose id is aut_, is still found
// by it on every route that takes an id.
func TestAutomationIDs(t *testing.T) {
	a := testapp.Start(t)
	r := a.Do("POST", "/v1/automations", map[string]any{"yaml": apiFlow})
	id, _ := r.JSON()["id"].(string)
	if r.Status != 201 || !strings.HasPrefix(id, "auto_") {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	// The same row as an older node minted it.
	old := "aut_" + strings.TrimPrefix(id, "auto_")
	for _, table := range []string{"automations", "automation_versions"} {
		col := map[string]string{"automations": "id", "automation_versions": "automation_id"}[table]
		if _, err := a.DB.Exec(t.Context(), `UPDATE `+table+` SET `+col+` = ? WHERE `+col+` = ?`, old, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"GET", "/v1/automations/" + old, nil, 200},
		{"GET", "/v1/automations/" + old + ".yaml", nil, 200},
		{"GET", "/v1/automations/" + old + "/versions", nil, 200},
		{"PATCH", "/v1/automations/" + old, map[string]any{"enabled": true}, 200},
		{"POST", "/v1/automations/" + old + "/trigger", map[string]any{"email": "x@example.com", "idempotency_key": "k"}, 202},
		{"GET", "/v1/automations/" + old + "/runs", nil, 200},
		{"GET", "/v1/automations/" + id, nil, 404},
		{"DELETE", "/v1/automations/" + old, nil, 200},
	} {
		if r := a.Do(c.method, c.path, c.body); r.Status != c.status {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
		} else if c.status == 200 && c.method == "GET" && strings.HasSuffix(c.path, old) && r.JSON()["id"] != old {
			t.Errorf("%s: id %v", c.path, r.JSON()["id"])
		}
	}
}
