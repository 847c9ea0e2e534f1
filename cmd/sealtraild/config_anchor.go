package main

import (
	"errors"
	"fmt"
	"net/url"
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
	// Rekor, when set, is a Sigstore Rekor v2 log (rekor-tiles) that logs every new
	// tree_heads checkpoint as a hashedrekord entry signed with the service key
	// (Ed25519ph). Package anchor/rekor, docs/anchoring-external.md.
	Rekor *PeerURLConfig `json:"rekor"`
	// TSA, when set, is an RFC 3161 time-stamping authority that timestamps every new
	// tree_heads checkpoint; its genTime becomes the anchors' anchoredAt. url is the
	// full timestamp endpoint (sigstore timestamp-authority: <base>/api/v1/timestamp).
	TSA *PeerURLConfig `json:"tsa"`
	// PeerTimeoutMS bounds one request to a Rekor log or TSA (default 30,000: Rekor
	// answers after its next checkpoint).
	PeerTimeoutMS int `json:"peerTimeoutMs"`
}

// PeerURLConfig names an outside party by its URL.
type PeerURLConfig struct {
	URL string `json:"url"`
}

func (a *AnchorConfig) peerTimeout() time.Duration {
	if a.PeerTimeoutMS == 0 {
		return 30 * time.Second
	}
	return ms(a.PeerTimeoutMS)
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
	if a.PeerTimeoutMS < 0 || (a.PeerTimeoutMS > 0 && a.PeerTimeoutMS < 100) {
		return errors.New("config: anchor.peerTimeoutMs must be at least 100 (0 is the default 30 s)")
	}
	for _, p := range []struct {
		name string
		cfg  *PeerURLConfig
	}{{"rekor", a.Rekor}, {"tsa", a.TSA}} {
		if p.cfg == nil {
			continue
		}
		if u, err := url.Parse(p.cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: anchor.%s.url %q must be an http(s) URL", p.name, p.cfg.URL)
		}
	}
	return nil
}
