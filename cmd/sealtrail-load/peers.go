package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// serve answers h on a loopback port, prints "listening <addr>" on stdout, and stops on
// SIGTERM or SIGINT.
func serve(h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runTrivial is the ceiling: a handler that reads the body and answers 202 as an
// ingest would, doing nothing else.
func runTrivial() error {
	return serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"evt_trivial","status":"sealed"}`+"\n")
	}))
}

// runTessera serves POST /add on Tessera's POSIX storage in dir: each entry is
// acknowledged once a published checkpoint covers it (PublicationAwaiter), with
// batches of up to 10 ms and a checkpoint every 100 ms.
func runTessera(dir string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	skey, _, err := note.GenerateKey(rand.Reader, "loadtest.localhost/tessera")
	if err != nil {
		return err
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	driver, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		return fmt.Errorf("tessera posix: %w", err)
	}
	appender, shutdown, reader, err := tessera.NewAppender(ctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithBatching(tessera.DefaultBatchMaxSize, 10*time.Millisecond).
		WithCheckpointInterval(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("tessera appender: %w", err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	awaiter := tessera.NewPublicationAwaiter(ctx, reader.ReadCheckpoint, 10*time.Millisecond)
	return serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		idx, _, err := awaiter.Await(r.Context(), appender.Add(r.Context(), tessera.NewEntry(b)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = fmt.Fprintf(w, `{"index":%d,"status":"sealed"}`+"\n", idx.Index)
	}))
}
