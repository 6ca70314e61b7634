package scenario

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// failures records what the runner would fail a test with, instead of
// failing this one.
type failures struct {
	testing.TB
	msg string
}

func (f *failures) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (s *Runner) failure(t *testing.T, c Case) string {
	f := &failures{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Do(f, c)
	}()
	<-done
	return f.msg
}

// TestRunnerFails checks that each kind of wrong answer fails a case, so
// that a table cannot pass by accident.
func TestRunnerFails(t *testing.T) {
	a := testapp.Start(t)
	s := New(a)
	flatNotFound := Case{Method: "DELETE", Path: "/v1/suppressions/sup_nope", Status: 404, Code: "not_found", Errors: Flat}
	if msg := s.failure(t, flatNotFound); msg != "" {
		t.Fatalf("a right case failed: %s", msg)
	}
	s.Do(t, Case{Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "k"}, Status: 201,
		Shape: Shape{"name": "k"}, Save: map[string]string{"keyID": "id"}})
	if s.Get("keyID") == "" {
		t.Fatal("nothing saved")
	}
	wrong := []struct {
		c    Case
		want string // in the failure
	}{
		{Case{Method: "GET", Path: "/v1/api-keys", Status: 201}, "want 201, got 200"},
		{Case{Method: "DELETE", Path: "/v1/suppressions/sup_nope", Status: 404, Code: "gone", Errors: Flat}, `want code "gone"`},
		{Case{Method: "DELETE", Path: "/v1/suppressions/sup_nope", Status: 404, Code: "not_found"}, "want the nested error shape"},
		{Case{Method: "DELETE", Path: "/v1/api-keys/key_nope", Status: 404, Code: "not_found", Errors: Flat}, "want the flat error shape"},
		{Case{Method: "DELETE", Path: "/v1/api-keys/key_nope", Status: 404}, "names no Code"},
		{Case{Method: "GET", Path: "/v1/api-keys", Status: 200, Shape: Shape{"api_keys": Len(5)}}, "want length 5"},
		{Case{Method: "DELETE", Path: "/v1/api-keys/{nope}", Status: 404, Code: "not_found"}, "{nope}"},
		{Case{Method: "GET", Path: "/v1/api-keys", Status: 200, Save: map[string]string{"x": "nope"}}, "cannot save x"},
	}
	for _, w := range wrong {
		if msg := s.failure(t, w.c); !strings.Contains(msg, w.want) {
			t.Errorf("%s %s: want a failure saying %q, got %q", w.c.Method, w.c.Path, w.want, msg)
		}
	}
	// The runner's own error shape applies when a case names none.
	s.Errors = Flat
	flatNotFound.Errors = Inherit
	if msg := s.failure(t, flatNotFound); msg != "" {
		t.Fatalf("the runner's shape was not used: %s", msg)
	}
}
