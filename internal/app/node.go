package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"mailroom/internal/config"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
	"mailroom/internal/webhooks"
)

// node is this process's place among the nodes serving one database. It
// writes a heartbeat every fifth of the node timeout and, on each beat,
// takes up the work of nodes whose heartbeat stopped: their running jobs
// become available at once and their webhook leases are released, instead
// of waiting for River's stuck-job rescue (minutes) or the lease (30 s). A
// live node keeps beating however long its deliveries take, so its work is
// never taken. The owner of a SQLite database (it holds the file's lock)
// knows at start that every other node is dead and takes everything up
// before its workers start.
type node struct {
	id      string
	host    string
	db      *store.DB
	timeout time.Duration
	owner   bool
	log     *slog.Logger

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// beat writes the heartbeat (db.Beat; a test makes it fail).
	beat func(ctx context.Context, id, host string, pid int) (bool, error)
	// lastBeat is when a heartbeat last succeeded (unix nanoseconds).
	lastBeat atomic.Int64
	// live ends when the node has gone 3/5 of the timeout without a
	// heartbeat (fenced): before the others may give it up, it stops its
	// deliveries; a heartbeat after that starts a new one (it rejoins).
	liveMu   sync.Mutex
	live     context.Context
	liveStop context.CancelFunc
}

// Live is the node's current liveness context (delivery.Config.Live).
func (n *node) Live() context.Context {
	n.liveMu.Lock()
	defer n.liveMu.Unlock()
	return n.live
}

// fenceAfter is how long without a heartbeat a node stops its own work: well
// before the others' timeout, so it stops first.
func (n *node) fenceAfter() time.Duration { return n.timeout * 3 / 5 }

// beaten notes a successful heartbeat and, if the node had fenced itself
// (or was given up meanwhile), starts it again.
func (n *node) beaten(givenUp bool) {
	n.lastBeat.Store(time.Now().UnixNano())
	n.liveMu.Lock()
	defer n.liveMu.Unlock()
	if givenUp && n.live.Err() == nil {
		n.liveStop() // its running work was taken up: stop what still runs
	}
	if n.live.Err() != nil {
		n.live, n.liveStop = context.WithCancel(context.Background())
		n.log.Info("node heartbeat back; delivering again", "node", n.id)
	}
}

// watch fences the node once its last heartbeat is older than fenceAfter.
func (n *node) watch() {
	if time.Since(time.Unix(0, n.lastBeat.Load())) < n.fenceAfter() {
		return
	}
	n.liveMu.Lock()
	defer n.liveMu.Unlock()
	if n.live.Err() == nil {
		n.liveStop()
		n.log.Warn("no heartbeat for too long: stopping this node's deliveries until it beats again, so that none runs twice", "node", n.id, "after", n.fenceAfter().String())
	}
}

func newNode(db *store.DB, timeout time.Duration, owner bool, log *slog.Logger) *node {
	host, _ := os.Hostname()
	// River's client id too: it marks the jobs this node fetches.
	id := fmt.Sprintf("node_%s_%d_%s", host, os.Getpid(), ids.Secret(5))
	if len(id) > 90 {
		id = id[:90]
	}
	n := &node{id: id, host: host, db: db, timeout: timeout, owner: owner, log: log, beat: db.Beat}
	n.live, n.liveStop = context.WithCancel(context.Background())
	n.lastBeat.Store(time.Now().UnixNano())
	return n
}

// start registers the node and takes up what dead nodes left; it returns
// before the queue and the webhook pool start, so that nothing of this
// node's own is taken up.
func (n *node) start(ctx context.Context) error {
	if _, err := n.beat(ctx, n.id, n.host, os.Getpid()); err != nil {
		return fmt.Errorf("registering node: %w", err)
	}
	n.beaten(false)
	if n.owner {
		var gone []string
		var jobsN, leasesN int64
		err := n.db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			if gone, err = tx.OtherNodes(ctx, n.id); err != nil {
				return err
			}
			if jobsN, err = jobs.RescueRunning(ctx, tx, "", "the node running the job stopped (taken up at restart)"); err != nil {
				return err
			}
			leasesN, err = webhooks.ReleaseClaims(ctx, tx, "")
			return err
		})
		if err != nil {
			return fmt.Errorf("taking up the work of the previous process: %w", err)
		}
		if jobsN > 0 || leasesN > 0 {
			n.log.Info("took up the work the previous process left", "jobs", jobsN, "webhook_leases", leasesN, "nodes", len(gone))
		}
	} else {
		// Nodes already stale need not wait for the first tick.
		n.reap(ctx)
	}
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go n.run(context.WithoutCancel(ctx))
	go n.watching()
	return nil
}

// watching checks the heartbeat's age ten times per timeout, apart from
// the beat loop, which a hanging database call can hold up.
func (n *node) watching() {
	t := time.NewTicker(max(n.timeout/10, 20*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.watch()
		}
	}
}

func (n *node) run(ctx context.Context) {
	defer close(n.done)
	t := time.NewTicker(max(n.timeout/5, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		bctx, cancel := context.WithTimeout(ctx, n.timeout/2)
		created, err := n.beat(bctx, n.id, n.host, os.Getpid())
		cancel()
		switch {
		case err != nil:
			n.log.Warn("node heartbeat failed", "node", n.id, "err", err)
		case created:
			// Our heartbeat stalled past the timeout (a pause, a lost
			// database): others took up our work; what still ran stops.
			n.log.Warn("node heartbeat resumed after the others gave this node up; its running work was taken up by them", "node", n.id)
			n.beaten(true)
		default:
			n.beaten(false)
		}
		rctx, cancel := context.WithTimeout(ctx, n.timeout)
		n.reap(rctx)
		cancel()
	}
}

// reap takes up the work of every node whose heartbeat is older than the
// timeout.
func (n *node) reap(ctx context.Context) {
	stale, err := n.db.StaleNodes(ctx, n.timeout)
	if err != nil {
		n.log.Warn("listing nodes", "err", err)
		return
	}
	for _, id := range stale {
		if id == n.id {
			continue
		}
		var took bool
		var jobsN, leasesN int64
		err := n.db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			if took, err = tx.GiveUpNode(ctx, id, n.timeout); err != nil || !took {
				return err
			}
			if jobsN, err = jobs.RescueRunning(ctx, tx, id, "the node running the job stopped beating ("+id+")"); err != nil {
				return err
			}
			leasesN, err = webhooks.ReleaseClaims(ctx, tx, id)
			return err
		})
		if err != nil {
			n.log.Warn("taking up a gone node's work", "gone", id, "err", err)
			continue
		}
		if took {
			n.log.Info("took up the work of a node that is gone", "gone", id, "jobs", jobsN, "webhook_leases", leasesN)
		}
	}
}

// close stops the heartbeat and removes the node's row: a clean stop
// leaves nothing running for others to take up. A second call does nothing.
func (n *node) close(ctx context.Context) error {
	var err error
	n.stopOnce.Do(func() {
		if n.stop == nil {
			return
		}
		close(n.stop)
		<-n.done
		err = n.db.DeleteNode(ctx, n.id)
	})
	return err
}

// secretFingerprintSetting names the secret key's fingerprint in
// cluster_settings.
const secretFingerprintSetting = "secret_key_fingerprint"

// secretFingerprint identifies the secret key without revealing it: an
// HMAC of a constant under the key.
func secretFingerprint(key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("mailroom secret key fingerprint v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// ErrSecretKeyMismatch is wrapped by the refusal to start with another key
// (and by /readyz's answer should the stored fingerprint change).
var ErrSecretKeyMismatch = errors.New("MAILROOM_SECRET_KEY does not match the key this database was first started with")

// checkSecretKey records the key's fingerprint on the first start and
// refuses a node whose key differs: it could open none of the webhook
// secrets, DKIM keys or links the others sealed.
func checkSecretKey(ctx context.Context, db *store.DB, cfg *config.Config, key string) error {
	mine := secretFingerprint(key)
	stored, err := db.EnsureSetting(ctx, secretFingerprintSetting, mine)
	if err != nil {
		return fmt.Errorf("reading the secret key fingerprint: %w", err)
	}
	if hmac.Equal([]byte(stored), []byte(mine)) {
		return nil
	}
	hint := "set MAILROOM_SECRET_KEY on this node to the value the other nodes use"
	if !cfg.IsPostgres() {
		hint = fmt.Sprintf("set MAILROOM_SECRET_KEY to the key the database was started with, or restore %s",
			filepath.Join(cfg.DataDir, "secret.key"))
	}
	return fmt.Errorf("%w (fingerprint %.12s, this node's %.12s): %s; a node with another key cannot open the webhook secrets, DKIM keys and links sealed with the first",
		ErrSecretKeyMismatch, stored, mine, hint)
}

// ready answers /readyz: the database answers and still holds this node's
// secret key fingerprint.
func (a *App) ready(ctx context.Context) error {
	if a.disk.Full() {
		return errors.New(a.disk.Short())
	}
	err := a.DB.Ping(ctx)
	var stored string
	if err == nil {
		stored, err = a.DB.Setting(ctx, secretFingerprintSetting)
	}
	if err != nil {
		a.Log.WarnContext(ctx, "not ready: the database does not answer", "err", err)
		return errDatabaseUnreachable
	}
	if mine := secretFingerprint(a.Config.SecretKey); !hmac.Equal([]byte(stored), []byte(mine)) {
		return fmt.Errorf("%w (fingerprint %.12s, this node's %.12s)", ErrSecretKeyMismatch, stored, mine)
	}
	return nil
}

// NodeID is this node's id among the nodes (and its River client id).
func (a *App) NodeID() string { return a.node.id }
