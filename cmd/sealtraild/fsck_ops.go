package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sealtrail/sealtrail/fsck"
	"github.com/sealtrail/sealtrail/servicekey"
	"github.com/sealtrail/sealtrail/tiles/storeurl"
	"github.com/sealtrail/sealtrail/tlog"
)

const fsckUsage = "usage: sealtraild fsck [--config file.json] [--data dir] [--sweep]"

// errDamaged is fsck's failure when it found damage (exit status 1).
var errDamaged = errors.New("storage is damaged")

// fsckCmd is `sealtraild fsck`: it checks the catalog and object store of the
// configured deployment (package fsck) and prints one line per problem. Exit status 0:
// no damage (orphans are listed, and deleted with --sweep); 1: damage found or the
// check failed; 2: usage.
func fsckCmd(args []string, stdout, stderr io.Writer) error {
	var sweep bool
	cfg, err := offlineConfig("fsck", fsckUsage, args, stdout, func(fs *flag.FlagSet) {
		fs.BoolVar(&sweep, "sweep", false, "delete the orphan payload objects found")
	})
	if err != nil || cfg == nil {
		return err
	}
	keyData, err := readKey("service key", cfg.SigningKeyFile)
	if err != nil {
		return usageError{err}
	}
	pub := keyData.Public().(ed25519.PublicKey)
	h, err := servicekey.Load(cfg.Ops.KeyHistoryFile, pub)
	if err != nil {
		return usageError{err}
	}
	keys := []ed25519.PublicKey{pub}
	for _, p := range h.Keys() {
		k, _ := tlog.ParsePublicKey(p.Key) // verified by Load
		keys = append(keys, k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := newLogger(stderr, cfg.LogLevel)
	cat, err := openCatalog(ctx, cfg.Catalog, logger)
	if err != nil {
		return err
	}
	defer cat.Close()
	store, err := storeurl.Open(ctx, cfg.Store)
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	ls, ok := store.(fsck.Store)
	if !ok {
		return fmt.Errorf("object store %s cannot list its objects", cfg.Store)
	}
	rep, err := fsck.Run(ctx, fsck.Options{Catalog: cat, Store: ls, Origin: cfg.Origin, Keys: keys, Sweep: sweep, Logger: logger})
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, p.String())
	}
	for _, k := range rep.Swept {
		fmt.Fprintf(stdout, "swept %s\n", k)
	}
	fmt.Fprintf(stdout, "fsck: %d project-streams, %d leaves (%d published), %d tiles and bundles compared, %d problems, %d swept\n",
		rep.Logs, rep.Leaves, rep.Published, rep.Objects, len(rep.Problems), len(rep.Swept))
	if err != nil {
		return err
	}
	if rep.Damaged() {
		return errDamaged
	}
	return nil
}

// offlineConfig parses the flags of an offline command (--config, --data and those
// extra adds) and returns the resolved configuration, or nil after --help.
func offlineConfig(name, usage string, args []string, stdout io.Writer, extra func(*flag.FlagSet)) (*Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "JSON config file")
	dataDir := fs.String("data", "", "data directory (overrides the config)")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			return nil, nil
		}
		return nil, usageError{fmt.Errorf("%s: %w", name, err)}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("%s takes no arguments, got %q", name, fs.Arg(0))}
	}
	cfg := defaultConfig()
	if err := cfg.load(*configPath); err != nil {
		return nil, usageError{err}
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if err := cfg.resolve(); err != nil {
		return nil, usageError{err}
	}
	return &cfg, nil
}
