package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"mailroom/internal/clock"
)

// incrScript increments the window's counter and gives a fresh key its
// expiry in the same round trip, so a crash between the two cannot leave a
// counter that never expires.
const incrScript = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return n`

// redisTTL outlives the window by a full window so that nodes whose clocks
// differ by a few seconds still find the counter.
const redisTTL = 2 * Window

// Redis is a Limiter whose counters live in Redis, so every node pointed at
// the same Redis enforces one budget per key. Keys are
// "<prefix>:<key>:<window start unix>".
type Redis struct {
	client *redis.Client
	clock  clock.Clock
	prefix string
	script *redis.Script
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a limiter sharing counters through client.
func NewRedis(client *redis.Client, c clock.Clock, prefix string) *Redis {
	return &Redis{client: client, clock: c, prefix: prefix, script: redis.NewScript(incrScript)}
}

// Allow counts one request for key. A Redis failure is returned as an error;
// the caller decides whether to fail open.
func (r *Redis) Allow(ctx context.Context, key string, limit int) (Result, error) {
	n, start, err := r.count(ctx, key)
	if err != nil {
		return Result{}, err
	}
	return result(n, limit, start), nil
}

// count counts one request for key and returns its position in the window
// that began at start.
func (r *Redis) count(ctx context.Context, key string) (n, start int64, err error) {
	start = windowStart(r.clock.Now())
	k := r.prefix + ":" + key + ":" + strconv.FormatInt(start, 10)
	n, err = r.script.Run(ctx, r.client, []string{k}, int(redisTTL.Seconds())).Int64()
	if err != nil {
		return 0, 0, fmt.Errorf("ratelimit: redis: %w", err)
	}
	return n, start, nil
}

// addScript adds counts made elsewhere to a window's counter, and raises it
// to at least what that node counted in all (a Redis that came back empty
// lost the window's earlier counts), with incrScript's expiry.
const addScript = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[2])
end
if redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return n`

// Carried is one key's counts from a node's memory: added (counted there
// while Redis was away) and total (its whole count in the window).
type Carried struct{ Added, Total int64 }

// Add carries counts made while Redis was away into the window that began
// at start, one round trip for all of them.
func (r *Redis) Add(ctx context.Context, start int64, counts map[string]Carried) error {
	pipe := r.client.Pipeline()
	for key, c := range counts {
		k := r.prefix + ":" + key + ":" + strconv.FormatInt(start, 10)
		pipe.Eval(ctx, addScript, []string{k}, c.Added, c.Total, int(redisTTL.Seconds()))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ratelimit: redis: %w", err)
	}
	return nil
}

// ParseRedisURL builds a client from a redis:// or rediss:// URL such as
// MAILROOM_REDIS_URL. It does not connect.
func ParseRedisURL(url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis url: %w", err)
	}
	// Calls end at their context's deadline, so Fallback's timeout bounds
	// an unreachable Redis; a refused dial is not retried on the spot
	// (Fallback tries again once per probe interval).
	opts.ContextTimeoutEnabled = true
	opts.DialerRetries = 1
	quietRedis.Do(func() { redis.SetLogger(discardLogs{}) })
	return redis.NewClient(opts), nil
}

// quietRedis silences go-redis's process-wide logger once, before the
// first client exists: it printed every failed dial, once per probe during
// an outage, which Fallback already logs once.
var quietRedis sync.Once

type discardLogs struct{}

func (discardLogs) Printf(context.Context, string, ...any) {}
