package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// AnchorConfig configures anchoring (package anchor, docs/anchoring.md): the
// service-wide tree_heads log and who attests its checkpoint. In the environment it is
// SEALTRAIL_ANCHOR, a JSON object of these members.
type AnchorConfig struct {
	// IntervalMS is the time between anchoring runs (default 3,600,000: the spec's
	// hour; seconds are fine for tests).
	IntervalMS int `json:"intervalMs"`
	// Disabled turns the job off on this replica (another may run it: one lease).
	Disabled bool `json:"disabled"`
	// Witnesses are C2SP tlog-witnesses asked to cosign every new tree_heads
	// checkpoint. Each must know the tree_heads log: its origin <origin>/tree_heads
	// and the verifier key that `sealtraild admin checkpoint-key` prints.
	Witnesses []WitnessConfig `json:"witnesses"`
}

// WitnessConfig names one witness.
type WitnessConfig struct {
	// URL is the witness's base URL; add-checkpoint is URL/add-checkpoint.
	URL string `json:"url"`
	// Key is its signed-note verifier key (<name>+<hash>+<base64 key>).
	Key string `json:"key"`
}

func (a *AnchorConfig) interval() time.Duration {
	if a.IntervalMS == 0 {
		return time.Hour
	}
	return ms(a.IntervalMS)
}

// check fails fast on a bad anchoring configuration.
func (a *AnchorConfig) check() error {
	if a.IntervalMS < 0 || (a.IntervalMS > 0 && a.IntervalMS < 100) {
		return errors.New("config: anchor.intervalMs must be at least 100 (0 is the default hour)")
	}
	for i, w := range a.Witnesses {
		if !strings.HasPrefix(w.URL, "http://") && !strings.HasPrefix(w.URL, "https://") {
			return fmt.Errorf("config: anchor.witnesses[%d].url %q must be http(s)", i, w.URL)
		}
		if _, err := tlog.NewCosignatureVerifier(w.Key); err != nil {
			return fmt.Errorf("config: anchor.witnesses[%d].key: %w", i, err)
		}
	}
	return nil
}
