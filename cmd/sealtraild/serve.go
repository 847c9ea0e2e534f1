package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/dashboard"
	"github.com/sealtrail/sealtrail/httpapi"
	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/storeurl"
	"github.com/sealtrail/sealtrail/tlog"
)

// db is what serve needs of a catalog driver.
type db interface {
	sequencer.Catalog
	control.Catalog
	httpapi.Catalog
	keyring.Store
	catalog.MailStore
	dashboard.Store
	keyring.RewrapStore
	Close()
}

func serve(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configPath := fs.String("config", "", "JSON config file (see docs/operations.md)")
	listen := fs.String("listen", "", "listen address (overrides the config)")
	dataDir := fs.String("data", "", "data directory (overrides the config)")
	dev := fs.Bool("dev", false, "create a demo project and print how to use it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: sealtraild serve [--config file.json] [--listen addr] [--data dir] [--dev]")
			return nil
		}
		return usageError{fmt.Errorf("serve: %w", err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("serve takes no arguments, got %q", fs.Arg(0))}
	}
	cfg := defaultConfig()
	if err := cfg.load(*configPath); err != nil {
		return usageError{err}
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if err := cfg.resolve(); err != nil {
		return usageError{err}
	}
	logs := newLogBuffer(stderr) // logbuffer.go
	defer logs.Close()
	logger := newLogger(logs, cfg.LogLevel)
	tuneGC(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, cfg, *dev, logger, stdout)
	if me := (*private.ModeError)(nil); errors.As(err, &me) {
		return usageError{err} // the operator's to fix, like a bad config
	}
	return err
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// run starts the service and blocks until ctx ends, then shuts down gracefully.
func run(ctx context.Context, cfg Config, dev bool, logger *slog.Logger, stdout io.Writer) error {
	if err := private.MkdirAll(cfg.DataDir); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	// A data folder that others can enter exposes the catalog and the store: refuse
	// it rather than change a mode the operator chose (docs/operations.md).
	if err := private.CheckDir("data directory", cfg.DataDir); err != nil {
		return err
	}
	key, err := loadOrCreateSigningKey(cfg.SigningKeyFile)
	if err != nil {
		return err
	}
	operatorToken, err := loadOrCreateToken(cfg.OperatorTokenFile)
	if err != nil {
		return err
	}
	o, err := startOps(ctx, cfg, key, operatorToken, logger)
	if err != nil {
		return err
	}
	defer o.close()
	cat, err := openCatalog(ctx, cfg.Catalog, logger)
	if err != nil {
		return err
	}
	defer cat.Close()
	kr, rotator, closeKEKs, err := openKeyring(ctx, cfg.KEK, cat, cat, logger) // serve_kek.go
	if err != nil {
		return err
	}
	defer closeKEKs()
	store, err := storeurl.Open(ctx, cfg.Store)
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	seq, err := sequencer.New(sequencer.Config{Catalog: cat, Store: store, Keyring: kr,
		Origin: cfg.Origin, Key: key, MaxBatch: cfg.MaxBatch, MaxAge: cfg.maxAge(), Logger: logger, Registerer: reg,
		PublishInterval: cfg.Publish.interval(), MaxPublishing: cfg.Publish.MaxStreamsPerRound,
		PublishBudget: cfg.Publish.BudgetPerSecond})
	if err != nil {
		return err
	}
	// Repair what a crash left between commit and publish before taking traffic.
	if err := seq.Recover(ctx); err != nil {
		return err
	}
	stopAnchoring, err := startAnchoring(ctx, cfg, cat, store, key, logger)
	if err != nil {
		return err
	}
	defer stopAnchoring()
	ctl := control.New(cat, seq, logger)
	queue, stopMail, err := startMail(ctx, cfg, cat, seq, key, logger, reg) // the queue: for the dashboard's sign-in links
	if err != nil {
		return err
	}
	defer stopMail()
	siemAdmin, stopSIEM, err := startSIEM(cfg, cat, seq, ctl, logger, reg, kr.KEKs(), rotator)
	if err != nil {
		return err
	}
	defer stopSIEM() // on the error paths; the graceful path stops it before the sequencer
	if err := startRetention(ctx, cfg.Retention, cat, seq, ctl, kr, store, logger); err != nil {
		return err
	}
	api, err := httpapi.New(httpapi.Config{Control: ctl, Sequencer: seq, Catalog: cat, Key: key, Store: store, Origin: cfg.Origin,
		OperatorToken: operatorToken, RateLimit: cfg.RateLimit, ReadRateLimit: cfg.ReadRateLimit,
		AuthFailureLimit: cfg.AuthFailureLimit, WriteTimeout: ms(cfg.WriteTimeoutMS), MaxBatchEvents: cfg.MaxBatchEvents,
		TrustProxyHeaders: cfg.TrustProxyHeaders, Logger: logger, Registry: reg, SIEM: siemAdmin, KEK: rotator,
		Ready: func(ctx context.Context) error { return ready(ctx, cat, store) }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	handler, err := withDashboard(&cfg, base, api, ctl, cat, queue, operatorToken, logger)
	if err != nil {
		return err
	}
	srv := httpServer(cfg, o.apiFirst(o.handler(handler, api.OperatorOnly), api), logger) // serve_front.go
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("sealtraild serving", "addr", base, "catalog", redact(cfg.Catalog), "store", cfg.Store, "origin", cfg.Origin)
	if dev {
		if err := devSetup(ctx, ctl, cfg, base, operatorToken, key, stdout); err != nil {
			logger.Error("dev set-up failed", "err", err)
		}
		printDashboard(stdout, cfg)
	}

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining requests and open batches")
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	stopSIEM()
	if err := seq.Close(shutCtx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// httpServer is the service's HTTP server with cfg's limits: a client that trickles
// its headers or body is cut off at the read timeouts (408 for a late body), one that
// stops reading at the write timeout, and oversize headers are refused with a JSON
// 431 (httpapi.LimitHeaders; net/http's plain-text 431 only past 4 times the limit).
func httpServer(cfg Config, h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           httpapi.LimitHeaders(h, cfg.MaxHeaderBytes),
		ReadHeaderTimeout: ms(cfg.ReadHeaderTimeoutMS),
		ReadTimeout:       ms(cfg.ReadTimeoutMS),
		WriteTimeout:      ms(cfg.WriteTimeoutMS),
		IdleTimeout:       ms(cfg.IdleTimeoutMS),
		MaxHeaderBytes:    httpapi.HeaderReadFactor * cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

func openCatalog(ctx context.Context, dsn string, logger *slog.Logger) (db, error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		if err := private.MkdirAll(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("catalog dir: %w", err)
		}
		d, err := sqlite.Open(ctx, path, sqlite.Options{Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		return d, nil
	}
	d, err := postgres.Open(ctx, dsn, postgres.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", redact(dsn), err)
	}
	return d, nil
}

// ready checks that the catalog answers and the store is reachable.
func ready(ctx context.Context, cat db, store tiles.Store) error {
	if _, err := cat.ListProjects(ctx, "", 1); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if _, err := store.Get(ctx, "readyz/probe"); err != nil && !errors.Is(err, tiles.ErrNotFound) {
		return fmt.Errorf("object store: %w", err)
	}
	return nil
}

// maxSecretFile bounds what is read of the service key and operator token files.
const maxSecretFile = 4096

// loadOrCreateSigningKey reads the service key (hex seed) at path, creating it with
// mode 0600 if it does not exist. A file group or others can access is refused.
func loadOrCreateSigningKey(path string) (ed25519.PrivateKey, error) {
	data, err := private.ReadSecret("service key", path, maxSecretFile)
	if errors.Is(err, os.ErrNotExist) {
		_, priv, err := tlog.GenerateKey()
		if err != nil {
			return nil, err
		}
		if err := writeSecretFile(path, hex.EncodeToString(priv.Seed())+"\n"); err != nil {
			return nil, fmt.Errorf("service key: %w", err)
		}
		return loadOrCreateSigningKey(path)
	}
	if err != nil {
		return nil, err
	}
	priv, err := tlog.ParsePrivateKey(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("service key %s: %w", path, err)
	}
	return priv, nil
}

// loadOrCreateToken reads the operator token at path, creating it with mode 0600 if it
// does not exist. A file group or others can access is refused.
func loadOrCreateToken(path string) (string, error) {
	data, err := private.ReadSecret("operator token", path, maxSecretFile)
	if errors.Is(err, os.ErrNotExist) {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if err := writeSecretFile(path, "sto_"+base64.RawURLEncoding.EncodeToString(b[:])+"\n"); err != nil {
			return "", fmt.Errorf("operator token: %w", err)
		}
		return loadOrCreateToken(path)
	}
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if len(tok) < 16 {
		return "", fmt.Errorf("operator token in %s is shorter than 16 characters", path)
	}
	return tok, nil
}

// writeSecretFile creates path with mode 0600, failing if it exists (a concurrent
// first start keeps the first file).
func writeSecretFile(path, content string) error {
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := private.Create(path)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// devSetup creates the demo project on first start and prints how to use it.
func devSetup(ctx context.Context, ctl *control.Service, cfg Config, base, operatorToken string, key ed25519.PrivateKey, out io.Writer) error {
	marker := filepath.Join(cfg.DataDir, "dev-project")
	actor := control.Actor{Type: "operator", ID: "dev-setup"}
	pub := hex.EncodeToString(key.Public().(ed25519.PublicKey))
	if data, err := os.ReadFile(marker); err == nil {
		fmt.Fprintf(out, "\nSealtrail is running at %s (data in %s).\n", base, cfg.DataDir)
		fmt.Fprintf(out, "Demo project %s exists; its API key was printed at first start.\n", strings.TrimSpace(string(data)))
		fmt.Fprintf(out, "Operator token: %s\nService public key: %s\n", operatorToken, pub)
		printCheckpointKeys(out, cfg, key)
		fmt.Fprintf(out, "New key: bin/sealtraild admin key create --project %s --scopes log:write,log:read,log:export,log:verify\n\n", strings.TrimSpace(string(data)))
		return nil
	}
	p, err := ctl.CreateProject(ctx, actor, "demo")
	if err != nil {
		return err
	}
	secret, _, err := ctl.CreateAPIKey(ctx, actor, p.ID, "dev", control.Scopes, time.Time{})
	if err != nil {
		return err
	}
	if err := writeSecretFile(marker, p.ID+"\n"); err != nil {
		return err
	}
	fmt.Fprintf(out, `
Sealtrail is running at %[1]s (data in %[2]s).

Demo project:       %[3]s
API key (all scopes, shown once): %[4]s
Operator token:     %[5]s
Service public key: %[6]s

Log an event:
  curl -sS -X POST %[1]s/api/v1/log -H 'Authorization: Bearer %[4]s' -H 'Content-Type: application/json' \
    -d '{"action":"user.login","actor":{"type":"user","id":"alice"}}'

Operator API: bin/sealtraild admin --help (reads the token from %[7]s)
Stop with Ctrl-C; restarting keeps every project, key and event.
`, base, cfg.DataDir, p.ID, secret, operatorToken, pub, cfg.OperatorTokenFile)
	printCheckpointKeys(out, cfg, key)
	fmt.Fprintln(out)
	return nil
}
