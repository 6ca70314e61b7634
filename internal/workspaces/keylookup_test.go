package workspaces_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/workspaces"
)

// Concurrent authentications share lookups, yet each answers for its own
// key: valid keys find their workspace, a deleted key and a made-up key are
// refused, and a key deleted between two requests is refused on the next.
func TestAuthenticateConcurrentBatches(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t)
	s := workspaces.New(db, clock.Real{})
	type presented struct {
		secret, workspace string // workspace "" means refused
	}
	var keys []presented
	for _, name := range []string{"A", "B", "C"} {
		ws, secret, err := s.CreateWorkspace(ctx, name, "owner@"+name+".test", true)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, presented{secret, ws.ID})
	}
	gone, goneSecret, err := s.CreateKey(ctx, keys[0].workspace, "gone", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKey(ctx, keys[0].workspace, gone.ID); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, presented{goneSecret, ""}, presented{"mr_" + "0123456789abcdef0123456789abcdef0123456789abcdef", ""})

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := keys[i%len(keys)]
			k, err := s.Authenticate(ctx, p.secret)
			switch {
			case p.workspace == "" && !errors.Is(err, workspaces.ErrBadKey):
				errs <- errors.New("a refused key authenticated")
			case p.workspace != "" && (err != nil || k.WorkspaceID != p.workspace):
				errs <- errors.New("a valid key failed or found another workspace")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Deletion applies to the very next request.
	k, err := s.Authenticate(ctx, keys[1].secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKey(ctx, keys[1].workspace, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, keys[1].secret); !errors.Is(err, workspaces.ErrBadKey) {
		t.Fatalf("deleted key: %v", err)
	}
}
