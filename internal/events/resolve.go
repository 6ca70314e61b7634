package events

import (
	"context"
	"sync"

	"mailroom/internal/store"
)

// Resolver rebuilds, when events are read for delivery, the data of events
// of one kind that Raise stored as a reference to a row the same
// transaction wrote (email.received names its message rather than copying
// its text, html and headers): it replaces each data[i] it recognises as
// such a reference with the data in full and leaves the others as they are.
type Resolver func(ctx context.Context, db *store.DB, data [][]byte) error

// resolvers: kind -> Resolver, set by app (the area that owns the rows
// imports this package, so it hands its resolver in).
var resolvers sync.Map

// UseResolver sets the resolver of kind's stored data.
func UseResolver(kind string, r Resolver) { resolvers.Store(kind, r) }

// resolve rebuilds the data of the events among evs whose kind has a
// resolver, one call per kind.
func resolve(ctx context.Context, db *store.DB, evs []Stored) error {
	byKind := map[string][]int{}
	for i, s := range evs {
		if _, ok := resolvers.Load(s.Type); ok {
			byKind[s.Type] = append(byKind[s.Type], i)
		}
	}
	for kind, idx := range byKind {
		r, _ := resolvers.Load(kind)
		data := make([][]byte, len(idx))
		for j, i := range idx {
			data[j] = evs[i].Data
		}
		if err := r.(Resolver)(ctx, db, data); err != nil {
			return err
		}
		for j, i := range idx {
			evs[i].Data = data[j]
		}
	}
	return nil
}
