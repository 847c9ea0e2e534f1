package rekor_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/anchor/rekor"
)

// The contract of package anchor, restated: the Publisher must satisfy it.
var _ interface {
	Type() string
	Publish(ctx context.Context, signedCheckpoint []byte) (string, json.RawMessage, time.Time, error)
} = (*rekor.Publisher)(nil)

// FuzzVerify feeds Verify hostile proofs: it must reject them with ErrVerify, never
// panic or accept (no proof can verify under the fresh Rekor key).
func FuzzVerify(f *testing.F) {
	_, logKey, err := newKeyPair()
	if err != nil {
		f.Fatal(err)
	}
	trust := rekor.Trust{LogKey: logKey}
	body := `eyJhcGlWZXJzaW9uIjoiMC4wLjIiLCJraW5kIjoiaGFzaGVkcmVrb3JkIiwic3BlYyI6e319`
	for _, seed := range []string{
		`{"transparencyLogEntry":{"kindVersion":{"kind":"hashedrekord","version":"0.0.2"},"canonicalizedBody":"` + body + `","inclusionProof":{"treeSize":"1","rootHash":"AA==","hashes":["AA=="],"checkpoint":{"envelope":"o\n1\nAAAA\n\n— o AAAA\n"}}}}`,
		`{"transparencyLogEntry":{"logIndex":"-1"}}`, `{"transparencyLogEntry":{"logIndex":1e99}}`,
		`{"transparencyLogEntry":null}`, `{}`, `[]`, `null`,
	} {
		f.Add([]byte("origin\n1\nAAAA\n\n— k sig\n"), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, cp, proof []byte) {
		_, err := rekor.Verify(cp, json.RawMessage(proof), trust)
		if !errors.Is(err, rekor.ErrVerify) {
			t.Fatalf("Verify = %v, want ErrVerify", err)
		}
	})
}
