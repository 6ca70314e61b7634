package policy_test

import (
	"context"
	"testing"
	"time"

	"mailroom/internal/config"
	"mailroom/internal/policy"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// BenchmarkAdmit is the policy's cost per send with every rule on and
// limits too high to fire (docs/performance.md, "Sending policy"): the
// marketing send takes the duplicate-content hash too.
func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	set := config.Policy{DailyQuota: 1e9, MonthlyQuota: 1e9, AddressDailyCap: 1e9, DuplicateBurst: 1e9,
		VelocityFactor: 1000, VelocityMinSends: 600, PauseBounceRate: 0.08, PauseComplaintRate: 0.003, PauseMinSends: 200,
		ColdStart: 1e9, ColdGrowth: 2}
	p := policy.New(policy.Config{DB: db, Settings: set})
	if err := p.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		marketing bool
	}{{"transactional", false}, {"marketing", true}} {
		b.Run(tc.name, func(b *testing.B) {
			m := policy.Send{WorkspaceID: "ws_bench", From: "onboarding@bench.test", Recipients: []string{"owner@bench.test"},
				HTML: "<p>Thanks for your order.</p>", Text: "Thanks for your order.", Marketing: tc.marketing, At: time.Now()}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Admit(ctx, m); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
