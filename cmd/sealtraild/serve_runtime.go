package main

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target when the operator sets neither
// GOGC nor GOMEMLIMIT. The ingest path allocates per request (parsing, encryption,
// the response) while its live heap stays small and bounded (docs/operations.md
// "Memory"), so a heap of up to five times the live data halves the time the collector
// takes from a busy service (about 15% of its CPU at GOGC=100 under `make loadtest`).
const defaultGCPercent = 400

// tuneGC applies defaultGCPercent unless the operator chose the collector's settings
// through the Go runtime's own variables.
func tuneGC(logger *slog.Logger) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	logger.Debug("garbage collector target set", "gogc", defaultGCPercent)
}
