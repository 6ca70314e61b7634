package delivery_test

import (
	"context"
	"testing"
	"time"

	"mailroom/internal/delivery"
	"mailroom/internal/sending"
)

// TestPurgeAttempts: retention removes an email's attempts once they are
// older than the cut-off, found through the email id's time prefix (00120
// keeps no index on created_at), and not before.
func TestPurgeAttempts(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	id := b.insert(t, send{From: "news@example.com", To: []string{"ann@example.net"}, Subject: "Hi", Text: "hello"})
	b.waitStatus(t, id, sending.StatusDelivered)
	attempts := func() int {
		as, err := b.a.Delivery().Attempts(ctx, b.a.WorkspaceID, id)
		if err != nil {
			t.Fatal(err)
		}
		return len(as)
	}
	if n := attempts(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	for _, tc := range []struct {
		before time.Time
		purged int64
	}{{time.Now().Add(-time.Hour), 0}, {time.Now().Add(time.Hour), 1}} {
		n, err := delivery.PurgeAttempts(ctx, b.a.DB, tc.before, 100)
		if err != nil || n != tc.purged {
			t.Fatalf("PurgeAttempts(%v) = %d (%v), want %d", tc.before, n, err, tc.purged)
		}
	}
	if n := attempts(); n != 0 {
		t.Errorf("%d attempts left, want 0", n)
	}
}
