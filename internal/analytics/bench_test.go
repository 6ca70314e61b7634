package analytics_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/analytics"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// BenchmarkRollupWrite is the rollups' share of the event path: per email,
// the email.sent and email.delivered counts of a delivery with two tags,
// in a transaction of one email or of a group commit of 50 (different
// templates, so rows do not merge). cpu-ns/op is this process's CPU per
// email (SQLite runs in it), steadier than wall-clock on a shared machine.
func BenchmarkRollupWrite(b *testing.B) {
	for _, per := range []int{1, 50} {
		b.Run(fmt.Sprintf("emails_per_tx=%d", per), func(b *testing.B) {
			db := testdb.Open(b)
			ctx := context.Background()
			at := time.Now()
			c0 := cpu()
			b.ResetTimer()
			for i := 0; i < b.N; i += per {
				err := db.InTx(ctx, func(tx *store.Tx) error {
					for j := range per {
						d := analytics.Dims{Domain: "a.example", TemplateID: fmt.Sprint("tpl_", j%10),
							Tags: map[string]string{"campaign": fmt.Sprint("c", (i+j)%20), "plan": fmt.Sprint("p", j%3)}}
						analytics.Add(tx, "ws_bench", at, d, analytics.Counts{Sent: 1})
						analytics.Add(tx, "ws_bench", at, d, analytics.Counts{Delivered: 1})
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
