package tsa_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sealtrail/sealtrail/anchor/tsa"
)

// FuzzVerify feeds Verify hostile proofs: it must reject them with ErrVerify, never
// panic or accept.
func FuzzVerify(f *testing.F) {
	trust, err := tsa.ParseTrust(otherChain(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"token":"MIIBAQYJKoZIhvcNAQcCoIIBAjCCAQ4CAQMxDTALBglghkgBZQMEAgEwEAYLKoZIhvcNAQkQAQSgAQQA"}`,
		`{"token":"MAA="}`, `{"token":"MIA="}`, `{"token":"oAA="}`, `{"token":""}`, `{}`, `[]`, `null`,
	} {
		f.Add([]byte("origin\n1\nAAAA\n\n— k sig\n"), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, cp, proof []byte) {
		_, err := tsa.Verify(cp, json.RawMessage(proof), trust)
		if !errors.Is(err, tsa.ErrVerify) {
			t.Fatalf("Verify = %v, want ErrVerify", err)
		}
	})
}
