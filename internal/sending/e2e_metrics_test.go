package sending_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
)

// The group committer reports its batches at /metrics: every accepted send
// is counted in exactly one commit, and on SQLite each commit's answers
// waited for a WAL flush (PostgreSQL's COMMIT is durable on return, so it
// reports none).
func TestGroupCommitMetrics(t *testing.T) {
	a := testapp.Start(t)
	before := histograms(t, a)
	const sends = 12
	var wg sync.WaitGroup
	for range sends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := a.Do(http.MethodPost, "/v1/emails", msg()); r.Status != http.StatusOK {
				t.Errorf("send: %d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	after := histograms(t, a)

	writes := after["mailroom_group_commit_writes"].sub(before["mailroom_group_commit_writes"])
	commits := after["mailroom_group_commit_seconds"].sub(before["mailroom_group_commit_seconds"])
	flushes := after["mailroom_group_commit_flush_seconds"].sub(before["mailroom_group_commit_flush_seconds"])
	// Background writes (the scheduler's promotion pass) may share or add
	// commits; the sends are all there.
	if writes.sum < sends || writes.count < 1 || float64(writes.count) > writes.sum {
		t.Fatalf("writes per commit: %d commits holding %v writes, want the %d sends among them", writes.count, writes.sum, sends)
	}
	if commits.count != writes.count || commits.sum <= 0 {
		t.Fatalf("commit time: %d observations summing %vs for %d commits", commits.count, commits.sum, writes.count)
	}
	if testdb.IsPostgres() {
		if flushes.count != 0 {
			t.Fatalf("PostgreSQL reported %d flushes after COMMIT", flushes.count)
		}
	} else if flushes.count < 1 || flushes.count > commits.count {
		t.Fatalf("SQLite reported %d flushes for %d commits", flushes.count, commits.count)
	}
}

type histogram struct {
	count uint64
	sum   float64
}

func (h histogram) sub(o histogram) histogram { return histogram{h.count - o.count, h.sum - o.sum} }

// histograms reads every histogram the node registers with one series, and
// the send committer's series of the group-commit histograms (each
// committer labels its own).
func histograms(t *testing.T, a *testapp.App) map[string]histogram {
	t.Helper()
	mfs, err := a.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]histogram{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(mf.GetMetric()) == 1 || slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == "committer" && l.GetValue() == "send"
			}) {
				h := m.GetHistogram()
				out[mf.GetName()] = histogram{h.GetSampleCount(), h.GetSampleSum()}
			}
		}
	}
	return out
}
