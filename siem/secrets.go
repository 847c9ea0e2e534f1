package siem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/keyring"
)

// A destination's secrets (the HEC token, the webhook secret) are never stored in
// clear: the catalog row holds the settings without them, and the secrets sealed by
// the service's key-encryption key, with the destination id as associated data (a
// sealed blob copied to another destination does not open).

// storedSettings is a destination's Config in the catalog.
type storedSettings struct {
	Settings
	// Sealed is the KEK-wrapped JSON of the secrets; KEKID names the KEK.
	Sealed []byte `json:"sealed,omitempty"`
	KEKID  string `json:"kekId,omitempty"`
}

type secrets struct {
	Token  string `json:"token,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// sealSettings renders s for the catalog, its secrets wrapped by kek.
func sealSettings(ctx context.Context, kek keyring.Wrapper, destID string, s Settings) ([]byte, error) {
	st := storedSettings{Settings: s}
	sec := secrets{Token: s.Token, Secret: s.Secret}
	st.Token, st.Secret = "", ""
	if sec != (secrets{}) {
		pt, err := json.Marshal(sec)
		if err != nil {
			return nil, fmt.Errorf("siem: secrets: %w", err)
		}
		if st.Sealed, err = kek.Wrap(ctx, pt, []byte(destID)); err != nil {
			return nil, fmt.Errorf("siem: seal secrets: %w", err)
		}
		st.KEKID = kek.ID()
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("siem: settings: %w", err)
	}
	return raw, nil
}

// openSettings reads a destination's Config; with kek nil the secrets stay sealed
// (and show as set).
func openSettings(ctx context.Context, kek keyring.Wrapper, destID string, raw []byte) (Settings, error) {
	var st storedSettings
	if err := json.Unmarshal(raw, &st); err != nil {
		return Settings{}, fmt.Errorf("siem: destination config: %w", err)
	}
	s := st.Settings
	if len(st.Sealed) == 0 {
		return s, nil
	}
	if kek == nil {
		s.Token, s.Secret = "(set)", "(set)"
		return s, nil
	}
	if set, ok := kek.(interface {
		Unwrapper(id string) (keyring.Wrapper, bool)
	}); ok && st.KEKID != kek.ID() { // a previous KEK during a rotation (keyring.KEKSet)
		if w, ok := set.Unwrapper(st.KEKID); ok {
			kek = w
		}
	}
	if st.KEKID != kek.ID() {
		return Settings{}, fmt.Errorf("siem: destination %s: secrets sealed by KEK %q, the service has %q (recreate the destination, or configure that KEK as a previous one)", destID, st.KEKID, kek.ID())
	}
	pt, err := kek.Unwrap(ctx, st.Sealed, []byte(destID))
	if err != nil {
		return Settings{}, fmt.Errorf("siem: open secrets of %s: %w", destID, err)
	}
	var sec secrets
	if err := json.Unmarshal(pt, &sec); err != nil {
		return Settings{}, fmt.Errorf("siem: secrets of %s: %w", destID, err)
	}
	s.Token, s.Secret = sec.Token, sec.Secret
	return s, nil
}

var errNoKEK = errors.New("siem: a key-encryption key is required")

// Secrets is the destinations' side of KEK rotation (a keyring.SecretOwner): the
// rotator's runs reseal every destination's secrets under the current KEK, and its
// status counts them, so the previous KEK can be dropped only once nothing it sealed
// is left.
type Secrets struct{ Catalog catalog.SIEMCatalog }

var _ keyring.SecretOwner = Secrets{}

// RewrapSecrets reseals under kek's current KEK the secrets of every destination
// sealed by another KEK of kek, with the same destination id as associated data. A
// destination changed or deleted meanwhile is skipped; a crash leaves the rest under
// the old KEK for the next run.
func (s Secrets) RewrapSecrets(ctx context.Context, kek *keyring.KEKSet) (keyring.RewrapStats, error) {
	var stats keyring.RewrapStats
	dests, err := s.Catalog.ListDestinations(ctx, "")
	if err != nil {
		return stats, fmt.Errorf("%w: list SIEM destinations: %w", keyring.ErrRewrap, err)
	}
	for _, d := range dests {
		var st storedSettings
		if err := json.Unmarshal(d.Config, &st); err != nil {
			return stats, fmt.Errorf("%w: SIEM destination %s: config: %w", keyring.ErrRewrap, d.ID, err)
		}
		if len(st.Sealed) == 0 || st.KEKID == kek.ID() {
			continue
		}
		old, ok := kek.Unwrapper(st.KEKID)
		if !ok {
			return stats, fmt.Errorf("%w: SIEM destination %s: secrets sealed by KEK %q, which is not configured (add it as a previous KEK)", keyring.ErrRewrap, d.ID, st.KEKID)
		}
		pt, err := old.Unwrap(ctx, st.Sealed, []byte(d.ID))
		if err != nil {
			return stats, fmt.Errorf("%w: SIEM destination %s: open secrets: %w", keyring.ErrRewrap, d.ID, err)
		}
		st.Sealed, err = kek.Wrap(ctx, pt, []byte(d.ID))
		clear(pt)
		if err != nil {
			return stats, fmt.Errorf("%w: SIEM destination %s: seal secrets: %w", keyring.ErrRewrap, d.ID, err)
		}
		st.KEKID = kek.ID()
		raw, err := json.Marshal(st)
		if err != nil {
			return stats, fmt.Errorf("%w: SIEM destination %s: config: %w", keyring.ErrRewrap, d.ID, err)
		}
		replaced, err := s.Catalog.ReplaceDestinationConfig(ctx, d.ID, d.Config, raw)
		if err != nil {
			return stats, fmt.Errorf("%w: SIEM destination %s: %w", keyring.ErrRewrap, d.ID, err)
		}
		if replaced {
			stats.Rewrapped++
		} else {
			stats.Skipped++
		}
	}
	return stats, nil
}

// CountSecretsByKEK returns the number of destinations whose secrets each KEK sealed.
func (s Secrets) CountSecretsByKEK(ctx context.Context) (map[string]int64, error) {
	dests, err := s.Catalog.ListDestinations(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("siem: list destinations: %w", err)
	}
	n := map[string]int64{}
	for _, d := range dests {
		var st storedSettings
		if err := json.Unmarshal(d.Config, &st); err != nil {
			return nil, fmt.Errorf("siem: destination %s: config: %w", d.ID, err)
		}
		if len(st.Sealed) > 0 {
			n[st.KEKID]++
		}
	}
	return n, nil
}
