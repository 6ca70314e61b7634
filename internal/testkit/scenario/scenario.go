// Package scenario runs API tests written as data: tables of requests and
// what each answer must be ({Name, Method, Path, Key, Body, Status, Code,
// Shape}), run in order by one runner against a testapp node, after
// PocketBase's ApiScenario. A value an answer carries (a new id, a key) can
// be saved and named as {var} in later paths, keys and bodies, so a table
// can tell a resource's life from create to delete.
package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// NoKey as a Case's Key sends no Authorization header.
const NoKey = "-"

// ErrShape is the error body a Case expects: the spec's nested
// { error: { code, message, next } } or flat { error: <code>, message, hint? }.
type ErrShape uint8

const (
	Inherit ErrShape = iota // the Runner's shape (a Case's default)
	Nested
	Flat
)

// Case is one request and what its answer must be.
type Case struct {
	Name   string
	Method string
	Path   string // {var} is replaced by a saved value
	Key    string // "" the node's key, NoKey none, or a key ({var} allowed)
	// Header holds extra request headers; an Authorization here wins over Key.
	Header map[string]string
	// Body is nil, a string or []byte sent as is ({var} replaced), an
	// io.Reader sent as is without a length (chunked), or a value sent as JSON.
	Body   any
	Status int
	// Code is the error code the answer must carry, in the shape Errors
	// (or the Runner's) names. An answer of 400 or more must name its code.
	Code   string
	Errors ErrShape
	// Shape is what the JSON answer must contain (see Shape).
	Shape Shape
	// Save names values of the answer for later cases: var name → field
	// path (e.g. "id", "error.code", "api_keys.0.id").
	Save map[string]string
	// Check runs after the other checks, for what a table cannot say.
	Check func(t testing.TB, r *testapp.Response)
}

// Runner runs cases against one node, keeping the saved values.
type Runner struct {
	App    *testapp.App
	Errors ErrShape // the error shape of the cases that do not say; Nested when unset
	vars   map[string]string
}

// New returns a runner for a whose error answers are nested unless a case
// or Errors says otherwise.
func New(a *testapp.App) *Runner {
	return &Runner{App: a, vars: map[string]string{}}
}

// WithOther makes another workspace and names its key "other": the cases
// that check another workspace's id answers 404 use Key: "{other}".
func (s *Runner) WithOther() *Runner {
	_, key := s.App.NewWorkspace("Other", "other@example.com")
	s.Set("other", key)
	return s
}

// Set names a value for later cases (e.g. an id made outside the API).
func (s *Runner) Set(name, value string) { s.vars[name] = value }

// Get returns a saved value.
func (s *Runner) Get(name string) string { return s.vars[name] }

// Run runs the cases in order, each as a subtest.
func (s *Runner) Run(t *testing.T, cases ...Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { s.Do(t, c) })
	}
}

// Do runs one case in t and returns the answer.
func (s *Runner) Do(t testing.TB, c Case) *testapp.Response {
	t.Helper()
	a := s.App.For(t)
	req := s.request(t, c)
	r := a.Send(req)
	where := c.Method + " " + req.URL.RequestURI()
	if r.Status != c.Status {
		t.Fatalf("%s: want %d, got %d %.600s", where, c.Status, r.Status, r.Body)
	}
	s.checkError(t, where, c, r)
	if c.Shape != nil {
		var got any
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatalf("%s: answer is not JSON: %v\n%.600s", where, err, r.Body)
		}
		if err := c.Shape.match("", got, true, s.vars); err != nil {
			t.Fatalf("%s: %v\nbody: %.1000s", where, err, r.Body)
		}
	}
	for name, path := range c.Save {
		v, ok := lookup(r.Body, path)
		if !ok {
			t.Fatalf("%s: cannot save %s: no %s in %.600s", where, name, path, r.Body)
		}
		s.vars[name] = v
	}
	if c.Check != nil {
		c.Check(t, r)
	}
	return r
}

func (s *Runner) checkError(t testing.TB, where string, c Case, r *testapp.Response) {
	t.Helper()
	if c.Code == "" {
		if c.Status >= 400 {
			t.Fatalf("%s: the case answers %d but names no Code", where, c.Status)
		}
		return
	}
	shape := c.Errors
	if shape == Inherit {
		shape = s.Errors
	}
	if got := r.ErrCode(); got != c.Code {
		t.Fatalf("%s: want code %q, got %q in %.600s", where, c.Code, got, r.Body)
	}
	m := r.JSON()
	if shape == Flat {
		if !r.ErrFlat() {
			t.Fatalf("%s: want the flat error shape, got %.600s", where, r.Body)
		}
		if msg, _ := m["message"].(string); msg == "" {
			t.Fatalf("%s: flat error without message: %.600s", where, r.Body)
		}
		if h, present := m["hint"]; present {
			if _, ok := h.(string); !ok {
				t.Fatalf("%s: hint is not a string: %.600s", where, r.Body)
			}
		}
		return
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("%s: want the nested error shape, got %.600s", where, r.Body)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("%s: nested error without message: %.600s", where, r.Body)
	}
	next, present := e["next"]
	if _, isString := next.(string); !present || (next != nil && !isString) {
		t.Fatalf("%s: nested error's next must be a string or null: %.600s", where, r.Body)
	}
}

var varRef = regexp.MustCompile(`\{([a-zA-Z_][a-zA-Z0-9_]*)\}`)

// expand replaces {var} by saved values; strict fails on a name not saved.
func (s *Runner) expand(t testing.TB, in string, strict bool) string {
	t.Helper()
	return varRef.ReplaceAllStringFunc(in, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := s.vars[name]
		if !ok {
			if strict {
				t.Fatalf("scenario: {%s} in %q was never saved", name, in)
			}
			return m
		}
		return v
	})
}

func (s *Runner) request(t testing.TB, c Case) *http.Request {
	t.Helper()
	var body io.Reader
	switch b := c.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(s.expand(t, b, false))
	case []byte:
		body = bytes.NewReader(b)
	case io.Reader:
		body = b
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("scenario: encoding the body: %v", err)
		}
		body = strings.NewReader(s.expand(t, string(buf), false))
	}
	req, err := http.NewRequest(c.Method, s.App.URL+s.expand(t, c.Path, true), body)
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	if c.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch key := s.expand(t, c.Key, true); key {
	case NoKey:
	case "":
		req.Header.Set("Authorization", "Bearer "+s.App.Key)
	default:
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	return req
}

// lookup reads a dotted path of the JSON body as text (strings as they
// are, other values as JSON).
func lookup(body []byte, path string) (string, bool) {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", false
	}
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return "", false
			}
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(x) {
				return "", false
			}
			v = x[i]
		default:
			return "", false
		}
	}
	if str, ok := v.(string); ok {
		return str, true
	}
	b, _ := json.Marshal(v)
	return string(b), true
}
