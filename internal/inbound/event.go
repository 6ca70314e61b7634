package inbound

import (
	"bytes"
	"context"
	"encoding/json"

	"mailroom/internal/store"
)

// receivedRef is what the event log stores for email.received: the message
// it announces, whose row the same transaction wrote, and the public URL
// its attachments' URLs were built on. ResolveReceived rebuilds the
// payload from them when the event is read (docs/decisions.md): the text,
// html and headers are not written twice per message.
type receivedRef struct {
	Message   string `json:"received_message"`
	PublicURL string `json:"public_url"`
}

// refKey starts every stored receivedRef and no full payload.
var refKey = []byte(`{"received_message":`)

// ResolveReceived is events.Resolver for email.received: each reference
// among data becomes the payload of its message, in one read. A message
// deleted before its event is read leaves only its message_id.
func ResolveReceived(ctx context.Context, db *store.DB, data [][]byte) error {
	refs := map[int]receivedRef{}
	var keys []string
	for i, d := range data {
		if !bytes.HasPrefix(d, refKey) {
			continue // stored in full before references
		}
		var r receivedRef
		if err := json.Unmarshal(d, &r); err != nil {
			return err
		}
		refs[i] = r
		keys = append(keys, r.Message)
	}
	if len(keys) == 0 {
		return nil
	}
	msgs, err := messagesByID(ctx, db, keys)
	if err != nil {
		return err
	}
	for i, r := range refs {
		var v any = map[string]string{"message_id": r.Message}
		if m, ok := msgs[r.Message]; ok {
			v = payload(m, r.PublicURL)
		}
		if data[i], err = json.Marshal(v); err != nil {
			return err
		}
	}
	return nil
}
