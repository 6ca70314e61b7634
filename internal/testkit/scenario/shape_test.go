package scenario

import (
	"encoding/json"
	"testing"
)

func TestShapeMatches(t *testing.T) {
	var body any
	if err := json.Unmarshal([]byte(`{"id":"sup_1","n":3,"null":null,"tags":["a","b"],
		"error":{"code":"x","next":null},"rows":[{"r":"bounce"},{"r":"bounce"}]}`), &body); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"id": "sup_1", "other": "sup_2"}
	cases := []struct {
		name  string
		shape Shape
		ok    bool
	}{
		{"literals", Shape{"id": "sup_1", "n": 3, "null": nil}, true},
		{"wrong literal", Shape{"id": "sup_2"}, false},
		{"wrong number", Shape{"n": 4}, false},
		{"null is not absent", Shape{"null": Absent}, false},
		{"absent", Shape{"missing": Absent}, true},
		{"present null", Shape{"null": Present}, true},
		{"missing is not null", Shape{"missing": nil}, false},
		{"missing is not present", Shape{"missing": Present}, false},
		{"array", Shape{"tags": []any{"a", "b"}}, true},
		{"typed array", Shape{"tags": []string{"a", "b"}}, true},
		{"array order", Shape{"tags": []any{"b", "a"}}, false},
		{"array length", Shape{"tags": []any{"a"}}, false},
		{"len", Shape{"tags": Len(2), "rows": Len(2)}, true},
		{"wrong len", Shape{"tags": Len(3)}, false},
		{"nested", Shape{"error": Shape{"code": "x", "next": nil}}, true},
		{"nested wrong", Shape{"error": Shape{"code": "y"}}, false},
		{"var", Shape{"id": Var("id")}, true},
		{"wrong var", Shape{"id": Var("other")}, false},
		{"unsaved var", Shape{"id": Var("nope")}, false},
		{"not var", Shape{"id": NotVar("other")}, true},
		{"not var equal", Shape{"id": NotVar("id")}, false},
		{"prefix", Shape{"id": Prefix("sup_")}, true},
		{"wrong prefix", Shape{"id": Prefix("em_")}, false},
		{"each", Shape{"rows": Each(Shape{"r": "bounce"})}, true},
		{"each fails", Shape{"rows": Each(Shape{"r": "manual"})}, false},
		{"keys", Shape{"error": Keys("code", "next")}, true},
		{"keys extra", Shape{"error": Keys("code")}, false},
		{"all", Shape{"rows": All(Len(2), Each(Shape{"r": "bounce"}))}, true},
		{"all fails", Shape{"rows": All(Len(2), Each(Shape{"r": "manual"}))}, false},
	}
	for _, c := range cases {
		err := c.shape.match("", body, true, vars)
		if (err == nil) != c.ok {
			t.Errorf("%s: ok %v, err %v", c.name, c.ok, err)
		}
	}
	if err := (Shape{}).match("", []any{}, true, vars); err == nil {
		t.Error("an array matched an object shape")
	}
}

func TestLookup(t *testing.T) {
	body := []byte(`{"id":"a","n":2,"list":[{"id":"b"}],"e":{"code":"c"}}`)
	for path, want := range map[string]string{"id": "a", "n": "2", "list.0.id": "b", "e.code": "c"} {
		if got, ok := lookup(body, path); !ok || got != want {
			t.Errorf("%s: %q %v", path, got, ok)
		}
	}
	for _, path := range []string{"x", "list.1.id", "list.x", "id.x"} {
		if got, ok := lookup(body, path); ok {
			t.Errorf("%s found %q", path, got)
		}
	}
}
