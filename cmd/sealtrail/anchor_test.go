package main

import (
	"testing"
)

// TestCLIVerifyAnchorTrustFiles: a --rekor-key or --tsa-cert file that is missing or
// holds no key or certificate is a usage error (exit 2, one line naming the flag),
// before the anchor file is read.
func TestCLIVerifyAnchorTrustFiles(t *testing.T) {
	anchors := writeFile(t, "anchors.json", []byte(`{"stream":"events","heads":[]}`))
	garbage := writeFile(t, "garbage.pem", []byte("not PEM\n"))
	cert := writeFile(t, "cert.pem", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rekor-key", garbage + ".missing"}, "--rekor-key"},
		{[]string{"--rekor-key", garbage}, "--rekor-key"},
		{[]string{"--rekor-key", cert}, "--rekor-key"},
		{[]string{"--tsa-cert", garbage + ".missing"}, "--tsa-cert"},
		{[]string{"--tsa-cert", garbage}, "--tsa-cert"},
		{[]string{"--tsa-cert", cert}, "--tsa-cert"},
	} {
		args := append([]string{"verify", "anchor", "--anchor", anchors}, tc.args...)
		expect(t, sealtrail(t, nil, args...), exitUsage, tc.want)
	}
}
