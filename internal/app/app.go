// Package app is the composition root: it builds the store, the queue, the
// services and the servers from a Config, and owns their start and stop order.
package app

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"mailroom/internal/events"
	"mailroom/internal/mailmetrics"
	"mailroom/internal/requestlog"
	"mailroom/internal/retention"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"

	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/diskguard"
	"mailroom/internal/httpapi"
	"mailroom/internal/jobs"
	"mailroom/internal/libcrypto"
	"mailroom/internal/ratelimit"
	"mailroom/internal/secretbox"
	"mailroom/internal/store"
	"mailroom/internal/submission"
	"mailroom/internal/tracking"
	"mailroom/internal/version"
	"mailroom/internal/workspaces"
)

// Options are the parts tests replace.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// SharedSQLite lets a second node in the same process share the first
	// one's SQLite file (tests of several nodes): it takes no lock and
	// takes up nothing at start. A node on SQLite otherwise owns its file.
	SharedSQLite bool
	// DKIMKeys makes the domains' DKIM keys (nil: generate each one).
	DKIMKeys func() (*rsa.PrivateKey, error)
}

// App is one running Mailroom node.
type App struct {
	Config     *config.Config
	DB         *store.DB
	Queue      *jobs.Queue
	Workspaces *workspaces.Service
	Box        *secretbox.Box
	Clock      clock.Clock
	Log        *slog.Logger
	Handler    http.Handler
	Registry   *prometheus.Registry
	Meter      *mailmetrics.Meter

	services   httpapi.Services
	background []Background
	delivery   deliveryParts
	submission *submission.Server
	retention  *retention.Worker
	requestLog *requestlog.Writer // nil when MAILROOM_RETAIN_REQUEST_LOGS is 0
	// dashboardSrv is the dashboard's own listener (MAILROOM_DASHBOARD_ADDR).
	dashboardSrv *sideServer
	// metricsSrv is /metrics' own listener (MAILROOM_METRICS_ADDR).
	metricsSrv *sideServer
	node       *node
	lock       *store.Lock
	// disk refuses new work while the database's disk is nearly full
	// (nil on PostgreSQL).
	disk *diskguard.Guard

	httpSrv  *http.Server
	httpLn   net.Listener
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	stopOnce sync.Once
}

// Open connects to the database and migrates it (shared by every command).
func Open(ctx context.Context, cfg *config.Config) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := jobs.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// New builds a node: database (migrated), queue, services and the HTTP handler.
func New(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	tuneGC()
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	useLibcrypto(cfg, o.Logger)
	a, err := open(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	built := false
	defer func() {
		if !built {
			a.DB.Close()
			a.lock.Release()
		}
	}()
	if err := a.wire(o); err != nil {
		return nil, err
	}
	limiter, err := newLimiter(cfg, o.Clock, o.Logger, a.Registry)
	if err != nil {
		return nil, err
	}
	if err := a.wireSubmission(limiter); err != nil {
		return nil, err
	}
	a.Handler = a.newHandler(limiter)
	built = true
	return a, nil
}

// open takes the secret key, the SQLite lock and the migrated database, and
// returns the App that holds them; on an error it holds nothing.
func open(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	key, err := cfg.EnsureSecretKey()
	if err != nil {
		return nil, err
	}
	box, err := secretbox.New(key)
	if err != nil {
		return nil, fmt.Errorf("MAILROOM_SECRET_KEY: %w", err)
	}
	// One process owns a SQLite database, so that at start it may take up
	// whatever a dead one left running; locked before migrating, so a
	// second serve changes nothing.
	var lock *store.Lock
	if !cfg.IsPostgres() && !o.SharedSQLite {
		if lock, err = store.LockSQLite(cfg.DatabaseURL); err != nil {
			return nil, err
		}
	}
	disk := newDiskGuard(cfg, o.Logger)
	db, err := Open(ctx, cfg)
	if err != nil {
		lock.Release()
		return nil, openError(disk, err)
	}
	if err := checkSecretKey(ctx, db, cfg, key); err != nil {
		db.Close()
		lock.Release()
		return nil, err
	}
	a := &App{Config: cfg, DB: db, Box: box, Clock: o.Clock, Log: o.Logger, Registry: prometheus.NewRegistry(), lock: lock, disk: disk}
	a.node = newNode(db, cfg.NodeTimeout, lock != nil, o.Logger.With("component", "node"))
	if disk != nil {
		a.background = append(a.background, disk)
	}
	return a, nil
}

// wire registers the node's metrics, builds every area's service with its
// workers, periodic jobs and background loops, and the queue that runs them.
func (a *App) wire(o Options) error {
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.Registry.MustRegister(buildInfo())
	// The mail counters (accepted, sent, delivered, ...) move with the
	// events that record them, after their commit.
	a.Meter = mailmetrics.New(a.Registry)
	events.CountInto(a.DB, a.Meter)
	a.Workspaces = workspaces.New(a.DB, o.Clock)

	// Each area builds its service and registers its workers, periodic jobs
	// and background loops in its own wire*.go file.
	w := &wiring{workers: river.NewWorkers(), dkimKeys: o.DKIMKeys}
	for _, wire := range []func(*wiring) error{a.wireSuppressions, a.wireTemplates, a.wireTopics, a.wireDomains, a.wireInbound, a.wirePolicy, a.wireSending, a.wireTracking, a.wireDelivery, a.wireWebhooks, a.wireContacts, a.wireBroadcasts, a.wireAutomations, a.wireRequestLog, a.wireDashboard, a.wireRetention} {
		if err := wire(w); err != nil {
			return err
		}
	}
	queueOpts := jobs.Options{
		Workers:     w.workers,
		Periodic:    w.periodic,
		Logger:      o.Logger.With("component", "queue"),
		RescueAfter: a.Config.JobRescueAfter,
		ClientID:    a.node.id,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: 20},
		},
	}
	for name, qc := range w.queues {
		queueOpts.Queues[name] = qc
	}
	q, err := jobs.New(a.DB, queueOpts)
	if err != nil {
		return err
	}
	a.Queue = q
	a.Registry.MustRegister(queueCollector{q: q})
	return nil
}

// newHandler is the API, with the dashboard beside it unless it has an
// address of its own; it also makes the side servers (metrics, dashboard).
func (a *App) newHandler(limiter ratelimit.Limiter) http.Handler {
	cfg := a.Config
	deps := httpapi.Deps{
		Workspaces:     a.Workspaces,
		Limiter:        limiter,
		KeyLimit:       cfg.RateLimit,
		AnonymousLimit: cfg.RateLimitAnonymous,
		Box:            a.Box,
		Clock:          a.Clock,
		Logger:         a.Log,
		LogRequests:    true,
		Registry:       a.Registry,
		Ready:          a.ready,
		Storage:        a.disk.Err,
		Services:       a.services,
		PublicURL:      cfg.PublicURL,
		// No token: loopback only on the API listener (docs/decisions.md).
		Metrics:            httpapi.MetricsAccess{Token: cfg.MetricsToken, LoopbackOnly: cfg.MetricsToken == ""},
		MetricsElsewhere:   cfg.MetricsAddr != "",
		StreamWriteTimeout: cfg.StreamWriteTimeout,
	}
	if a.requestLog != nil {
		deps.RequestLog = a.requestLog
	}
	if a.metricsSrv = a.newMetricsServer(); a.metricsSrv != nil {
		a.background = append(a.background, a.metricsSrv)
	}
	bodies := newBodyGuard(cfg)
	dash := a.newDashboard(limiter)
	if dash != nil && cfg.DashboardAddr == "" {
		deps.Pages = dash // at / beside the API
	} else if dash != nil {
		a.dashboardSrv = &sideServer{setting: "MAILROOM_DASHBOARD_ADDR", addr: cfg.DashboardAddr, log: a.Log,
			srv: &http.Server{Handler: bodies.Wrap(dash.Handler()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}}
		a.background = append(a.background, a.dashboardSrv)
	}
	return bodies.Wrap(httpapi.NewHandler(deps))
}

func newLimiter(cfg *config.Config, c clock.Clock, log *slog.Logger, reg prometheus.Registerer) (ratelimit.Limiter, error) {
	if cfg.RedisURL == "" {
		return ratelimit.NewMemory(c), nil
	}
	client, err := ratelimit.ParseRedisURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("MAILROOM_REDIS_URL: %w", err)
	}
	// While Redis is unreachable each node counts in its own memory.
	l := ratelimit.NewFallback(ratelimit.NewRedis(client, c, "mailroom:rl"), ratelimit.NewMemory(c), log)
	reg.MustRegister(l)
	return l, nil
}

// Start opens the listeners and starts the workers. It returns once the node
// is serving.
func (a *App) Start(ctx context.Context) error {
	bgctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	if err := a.node.start(bgctx); err != nil {
		return err
	}
	if err := a.Queue.Start(bgctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", a.Config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening on MAILROOM_HTTP_ADDR %s: %w", a.Config.HTTPAddr, err)
	}
	a.httpLn = ln
	a.httpSrv = &http.Server{Handler: a.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	a.httpSrv.RegisterOnShutdown(a.services.Webhooks.CloseStreams) // a stream is never idle: it would hold Shutdown
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		if err := a.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Log.Error("http server stopped", "err", err)
		}
	}()
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		a.Workspaces.RunFlusher(bgctx, 5*time.Second)
	}()
	for _, b := range a.background {
		if err := b.Start(bgctx); err != nil {
			return err
		}
	}
	a.Log.Info("mailroom serving", "http", ln.Addr().String(), "database", a.DB.Dialect.String())
	return nil
}

// HTTPAddr is the address the API listens on (useful with port 0).
func (a *App) HTTPAddr() string {
	if a.httpLn == nil {
		return ""
	}
	return a.httpLn.Addr().String()
}

// Stop drains: the HTTP server finishes in-flight requests, the queue lets
// running jobs end, background loops flush, then the database closes. A
// second call does nothing.
func (a *App) Stop(ctx context.Context) error {
	var err error
	a.stopOnce.Do(func() {
		if a.httpSrv != nil {
			err = errors.Join(err, a.httpSrv.Shutdown(ctx))
		}
		for i := len(a.background) - 1; i >= 0; i-- {
			err = errors.Join(err, a.background[i].Stop(ctx))
		}
		err = errors.Join(err, a.Queue.Stop(ctx))
		err = errors.Join(err, a.node.close(ctx))
		if a.cancel != nil {
			a.cancel()
		}
		a.bg.Wait()
		err = errors.Join(err, a.DB.Close())
		err = errors.Join(err, a.lock.Release())
	})
	return err
}

// Background is a long-running part (SMTP listener, dispatcher loop) started
// after the queue and stopped, in reverse order, before it.
type Background interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// wiring collects what the areas register while the node is built.
type wiring struct {
	workers  *river.Workers
	periodic []*river.PeriodicJob
	queues   map[string]river.QueueConfig    // extra named queues beside the default one
	dkimKeys func() (*rsa.PrivateKey, error) // Options.DKIMKeys
	links    *tracking.Links                 // wireTracking, for the deliver job
}

// GCPercent is the garbage collector's target on a node whose environment
// sets no GOGC. A node keeps little alive and makes much short-lived garbage
// (each message built, signed and sent), so Go's default of 100 collected
// often: bench/broadcast ran at 815–835 recipients/s with 200 against
// 723–772 with 100, for 11 MB more peak RSS (docs/performance.md).
const GCPercent = 200

// buildInfo is mailroom_build_info: 1, labelled with the build and the DKIM
// signer (libcrypto's version, or "off").
func buildInfo() prometheus.Collector {
	in := version.Read()
	lc, ok := libcrypto.Loaded()
	if !ok {
		lc = "off"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "mailroom_build_info", Help: "The running build: version, commit, Go version and DKIM signer (always 1).",
		ConstLabels: prometheus.Labels{"version": in.Version, "commit": in.Commit, "goversion": in.GoVersion, "libcrypto": lc}})
	g.Set(1)
	return g
}

// useLibcrypto turns libcrypto's RSA signing on or off for the process as
// configured, and says which signs.
func useLibcrypto(cfg *config.Config, log *slog.Logger) {
	libcrypto.Use(cfg.Libcrypto)
	v, ok := libcrypto.Loaded()
	in := version.Read()
	log.Info("mailroom "+in.Version, "version", in.Version, "commit", in.Commit, "built", in.BuildTime, "go", in.GoVersion, "cgo", in.Cgo, "libcrypto", v)
	if ok {
		log.Info("DKIM RSA signatures by libcrypto", "version", v)
		return
	}
	log.Info("DKIM RSA signatures by Go's crypto/rsa", "libcrypto", libcrypto.WhyNot())
}

// tuneGC applies GCPercent unless the operator set GOGC.
func tuneGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(GCPercent)
	}
}
