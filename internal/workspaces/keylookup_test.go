package workspaces_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/testsignal"
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
	gone, goneSecret, err := s.CreateKey(ctx, nil, keys[0].workspace, "gone", nil, false, workspaces.KeyMailbox{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKey(ctx, keys[0].workspace, "", gone.ID); err != nil {
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
	if err := s.DeleteKey(ctx, keys[1].workspace, "", k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, keys[1].secret); !errors.Is(err, workspaces.ErrBadKey) {
		t.Fatalf("deleted key: %v", err)
	}
}

// Two handles on one database stand for two processes on one SQLite file (or
// two nodes on PostgreSQL). A key that one of them has just authenticated,
// and may have cached, is refused by it on the first request that starts
// after the other answered its revocation, while requests keep coming.
func TestRevocationReachesOtherProcess(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	open := func() *workspaces.Service {
		db, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return workspaces.New(db, clock.Real{})
	}
	a, b := open(), open()
	ws, secret, err := a.CreateWorkspace(ctx, "W", "owner@w.test", true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := a.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}

	// Requests on a all through the revocation: each one that started after
	// the revocation was answered must be refused.
	var revokedAt atomic.Int64 // unix nanos when b answered; 0 before
	stop := make(chan struct{})
	errs := make(chan error, 8)
	// Each requester signals once it is answering (before the revocation)
	// and once it was answered for a request that started after it.
	var running, checked testsignal.Signal[struct{}]
	running.Init()
	checked.Init()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, firstAfter := true, true
			for {
				select {
				case <-stop:
					return
				default:
				}
				after := revokedAt.Load() != 0
				_, err := a.Authenticate(ctx, secret)
				if after && !errors.Is(err, workspaces.ErrBadKey) {
					select { // the first few are enough to report
					case errs <- fmt.Errorf("a request that started after the revocation got %v", err):
					default:
					}
				}
				if first {
					first = false
					running.Send(struct{}{})
				}
				if after && firstAfter {
					firstAfter = false
					checked.Send(struct{}{})
				}
			}
		}()
	}
	running.WaitN(t, 8)
	if err := b.DeleteKey(ctx, ws.ID, "", k.ID); err != nil {
		t.Fatal(err)
	}
	revokedAt.Store(time.Now().UnixNano())
	checked.WaitN(t, 8)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); !errors.Is(err, workspaces.ErrBadKey) {
		t.Fatalf("revoked key on the other process: %v", err)
	}
}

// A send may take a key this node found before on trust (on PostgreSQL,
// where nodes share no memory), but the key says so, and confirming it
// reads the database: a revocation by another node refuses it there, and
// plain Authenticate never trusts memory. On SQLite nothing is taken on
// trust (the shared epoch already makes the cache exact).
func TestAuthenticateForSendMarksTrust(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t)
	a, b := workspaces.New(db, clock.Real{}), workspaces.New(db, clock.Real{}) // two nodes
	ws, _, err := a.CreateWorkspace(ctx, "A", "owner@a.test", true)
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := a.CreateKey(ctx, nil, ws.ID, "sender", nil, false, workspaces.KeyMailbox{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); err != nil { // b finds the key
		t.Fatal(err)
	}
	trusted, err := b.AuthenticateForSend(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if want := db.Dialect == store.Postgres; trusted.Unconfirmed != want {
		t.Fatalf("Unconfirmed = %v on %s, want %v", trusted.Unconfirmed, db.Dialect, want)
	}
	if err := trusted.Confirm(ctx); err != nil || trusted.Unconfirmed {
		t.Fatalf("confirming a live key: %v (unconfirmed %v)", err, trusted.Unconfirmed)
	}

	if _, err := a.Authenticate(ctx, secret); err != nil { // a finds it too
		t.Fatal(err)
	}
	if err := a.DeleteKey(ctx, ws.ID, "", k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); !errors.Is(err, workspaces.ErrBadKey) {
		t.Fatalf("Authenticate after revocation on another node: %v", err)
	}
	// b's memory may still hold the key (PostgreSQL); confirming it must not.
	trusted, err = b.AuthenticateForSend(ctx, secret)
	switch {
	case errors.Is(err, workspaces.ErrBadKey):
	case err != nil:
		t.Fatal(err)
	case !trusted.Unconfirmed:
		t.Fatal("a revoked key came back as confirmed")
	default:
		if err := trusted.Confirm(ctx); !errors.Is(err, workspaces.ErrBadKey) {
			t.Fatalf("confirming a revoked key: %v", err)
		}
	}
	// The revoking node forgets it at once.
	if _, err := a.AuthenticateForSend(ctx, secret); !errors.Is(err, workspaces.ErrBadKey) {
		t.Fatalf("the revoking node still trusts the key: %v", err)
	}
}
