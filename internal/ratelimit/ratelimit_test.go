package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"testing"
	"time"

	"mailroom/internal/clock"
)

// base is 20 seconds into a minute so the tests see a partial window.
var base = time.Date(2025, 3, 1, 12, 0, 20, 0, time.UTC)

// exercise checks the behaviour both limiters must share.
func exercise(t *testing.T, l Limiter, fake *clock.Fake, key string) {
	t.Helper()
	ctx := context.Background()
	const limit = 3
	wantReset := time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC)

	steps := []struct {
		advance       time.Duration
		key           string
		wantAllowed   bool
		wantRemaining int
		wantReset     time.Time
	}{
		{0, key, true, 2, wantReset},
		{time.Second, key, true, 1, wantReset},
		{time.Second, key, true, 0, wantReset},
		{time.Second, key, false, 0, wantReset},
		{time.Second, key, false, 0, wantReset},
		{0, key + "-other", true, 2, wantReset}, // budgets are per key
		{36 * time.Second, key, true, 2, wantReset.Add(time.Minute)},
		{58 * time.Second, key, true, 1, wantReset.Add(time.Minute)},
	}
	for i, s := range steps {
		fake.Advance(s.advance)
		r, err := l.Allow(ctx, s.key, limit)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if r.Allowed != s.wantAllowed || r.Remaining != s.wantRemaining || !r.Reset.Equal(s.wantReset) || r.Limit != limit {
			t.Fatalf("step %d at %s: got %+v, want allowed=%v remaining=%d reset=%s",
				i, fake.Now().Format(time.TimeOnly), r, s.wantAllowed, s.wantRemaining, s.wantReset)
		}
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(base)
	exercise(t, NewMemory(fake), fake, "key_a")
}

func TestMemoryZeroLimitAllowsNothing(t *testing.T) {
	t.Parallel()
	r, _ := NewMemory(clock.NewFake(base)).Allow(context.Background(), "k", 0)
	if r.Allowed || r.Remaining != 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestMemoryPurgesOldWindows(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(base)
	m := NewMemory(fake)
	for i := range 1000 {
		m.Allow(context.Background(), fmt.Sprint("k", i), 10)
	}
	fake.Advance(time.Minute)
	m.Allow(context.Background(), "fresh", 10)
	s := &m.shards[maphash.String(m.seed, "fresh")%shardCount]
	if len(s.counts) != 1 {
		t.Fatalf("shard keeps %d counters after the window turned; want only the fresh one", len(s.counts))
	}
}

func TestMemoryConcurrentExactBudget(t *testing.T) {
	t.Parallel()
	m := NewMemory(clock.NewFake(base))
	const limit, workers, each = 500, 8, 200
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			n := 0
			for range each {
				if r, _ := m.Allow(context.Background(), "shared", limit); r.Allowed {
					n++
				}
			}
			mu.Lock()
			allowed += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if allowed != limit {
		t.Fatalf("allowed %d of %d requests; want exactly %d", allowed, workers*each, limit)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	r := Result{Reset: base.Add(40 * time.Second)}
	for _, c := range []struct {
		now  time.Time
		want time.Duration
	}{
		{base, 40 * time.Second},
		{base.Add(39*time.Second + 500*time.Millisecond), time.Second},
		{base.Add(41 * time.Second), time.Second},
	} {
		if got := r.RetryAfter(c.now); got != c.want {
			t.Errorf("RetryAfter(%s) = %s, want %s", c.now, got, c.want)
		}
	}
}

// TestRedisSharedBudget runs two limiters (two nodes) against one Redis and
// checks that they draw from one budget. The windows come from a fake clock
// and the prefix is unique per run, so real time only matters for the
// two-minute key expiry.
func TestRedisSharedBudget(t *testing.T) {
	url := os.Getenv("MAILROOM_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	client, err := ParseRedisURL(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Skipf("Redis not reachable at %s (set MAILROOM_TEST_REDIS_URL): %v", url, err)
	}

	prefix := fmt.Sprintf("mailroom-test-%d", time.Now().UnixNano())
	fake := clock.NewFake(base)
	exercise(t, NewRedis(client, fake, prefix), fake, "single")

	fake2 := clock.NewFake(base)
	nodeA := NewRedis(client, fake2, prefix)
	nodeB := NewRedis(client, fake2, prefix)
	const limit = 4
	var got []bool
	for i := range 6 {
		node := nodeA
		if i%2 == 1 {
			node = nodeB
		}
		r, err := node.Allow(ctx, "shared", limit)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Allowed)
	}
	want := []bool{true, true, true, true, false, false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("alternating nodes: allowed %v, want %v", got, want)
	}

	key := prefix + ":shared:" + fmt.Sprint(windowStart(base))
	ttl, err := client.TTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > redisTTL {
		t.Fatalf("TTL of %s = %s, %v; want in (0, %s]", key, ttl, err, redisTTL)
	}
}

func TestParseRedisURLRejectsGarbage(t *testing.T) {
	t.Parallel()
	if _, err := ParseRedisURL("http://nope"); err == nil {
		t.Fatal("want error for a non-redis URL")
	}
}

func BenchmarkMemoryParallel(b *testing.B) {
	m := NewMemory(clock.Real{})
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Allow(context.Background(), fmt.Sprint("key", i%1000), 600)
			i++
		}
	})
}
