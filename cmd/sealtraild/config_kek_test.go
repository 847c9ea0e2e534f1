package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigKEK: the KEK defaults to the key file, is read from the config file or
// $SEALTRAIL_KEK as JSON, and a bad one stops the start with a message naming it.
func TestConfigKEK(t *testing.T) {
	dir := t.TempDir()
	c := defaultConfig()
	c.DataDir = dir
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	if c.KEK.Type != "file" || c.KEK.File != filepath.Join(dir, "kek.key") {
		t.Fatalf("default KEK: %+v", c.KEK)
	}

	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"kek":{"type":"aws-kms","keyId":"alias/a","region":"eu-west-1",
		"previous":[{"type":"file","file":"/k/old.key"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c = defaultConfig()
	if err := c.load(path); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	if c.KEK.Type != "aws-kms" || c.KEK.KeyID != "alias/a" || len(c.KEK.Previous) != 1 || c.KEK.Previous[0].File != "/k/old.key" {
		t.Fatalf("from the file: %+v", c.KEK)
	}

	t.Setenv("SEALTRAIL_KEK", `{"type":"gcp-kms","keyId":"projects/p/locations/l/keyRings/r/cryptoKeys/k"}`)
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if c.KEK.Type != "gcp-kms" {
		t.Fatalf("from the environment: %+v", c.KEK)
	}
	t.Setenv("SEALTRAIL_KEK", `{"type":"aws-kms","keyId":"x","pin":"1234"}`)
	if err := (&Config{}).load(""); err == nil || !strings.Contains(err.Error(), "SEALTRAIL_KEK") {
		t.Fatalf("unknown member in $SEALTRAIL_KEK: %v", err)
	}

	for _, tc := range []struct {
		name string
		kek  KEKConfig
		want string
	}{
		{"unknown type", KEKConfig{Type: "vault"}, "must be file, aws-kms, gcp-kms or pkcs11"},
		{"aws without key", KEKConfig{Type: "aws-kms"}, "needs a keyId"},
		{"gcp without key", KEKConfig{Type: "gcp-kms"}, "needs a keyId"},
		{"pkcs11 without module", KEKConfig{Type: "pkcs11", KeyID: "k", TokenLabel: "t"}, "needs module"},
		{"negative timeout", KEKConfig{Type: "aws-kms", KeyID: "k", TimeoutMS: -1}, "must not be negative"},
		{"previous without type", KEKConfig{Type: "aws-kms", KeyID: "k", Previous: []KEKConfig{{File: "x"}}}, "needs a type"},
		{"previous repeats current", KEKConfig{Type: "aws-kms", KeyID: "k", Previous: []KEKConfig{{Type: "aws-kms", KeyID: "k"}}}, "repeats"},
		{"nested previous", KEKConfig{Type: "aws-kms", KeyID: "k", Previous: []KEKConfig{{Type: "file", File: "x",
			Previous: []KEKConfig{{Type: "file", File: "y"}}}}}, "cannot have their own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultConfig()
			c.DataDir = t.TempDir()
			c.KEK = tc.kek
			if err := c.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolve = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestOpenKeyringUnknownType: a type the build left out is refused at start.
func TestOpenKeyringUnknownType(t *testing.T) {
	_, _, _, err := openKeyring(context.Background(), KEKConfig{Type: "nope"}, nil, nil, newLogger(new(strings.Builder), "info"))
	if err == nil || !strings.Contains(err.Error(), "not in this build") {
		t.Fatalf("openKeyring = %v", err)
	}
}
