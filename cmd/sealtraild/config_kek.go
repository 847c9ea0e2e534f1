package main

import (
	"errors"
	"fmt"
	"strings"
)

// KEKConfig selects the key-encryption key that wraps payload data keys (config
// "kek"; or SEALTRAIL_KEK as the same JSON). See docs/keyring.md and docs/operations.md.
//
//	{"type": "file", "file": "/var/lib/sealtrail/kek.key"}                    (the default: kekFile)
//	{"type": "aws-kms", "keyId": "alias/sealtrail", "region": "eu-west-1"}
//	{"type": "gcp-kms", "keyId": "projects/P/locations/L/keyRings/R/cryptoKeys/K"}
//	{"type": "pkcs11", "module": "/usr/lib/softhsm/libsofthsm2.so", "tokenLabel": "sealtrail",
//	 "keyId": "kek-2026", "pinFile": "/etc/sealtrail/hsm.pin"}
//
// Previous lists the KEKs a rotation moves data keys away from: they only unwrap,
// until `sealtraild admin kek rewrap` has moved every key (`admin kek status`).
type KEKConfig struct {
	// Type is file (default), aws-kms, gcp-kms or pkcs11.
	Type string `json:"type"`
	// File is the key file of type file (default: kekFile, <dataDir>/kek.key).
	File string `json:"file,omitempty"`
	// KeyID names the key: an AWS key id, ARN or alias; a Cloud KMS crypto key name;
	// the CKA_LABEL of the AES key in a PKCS#11 token.
	KeyID string `json:"keyId,omitempty"`
	// Region (aws-kms) overrides the SDK's region.
	Region string `json:"region,omitempty"`
	// Endpoint (aws-kms, gcp-kms) overrides the KMS endpoint.
	Endpoint string `json:"endpoint,omitempty"`
	// Module, TokenLabel and PINFile (pkcs11): the token's PKCS#11 library, the label
	// of the token, and a file (mode 0600) holding the user PIN; without PINFile the
	// PIN is read from $SEALTRAIL_PKCS11_PIN.
	Module     string `json:"module,omitempty"`
	TokenLabel string `json:"tokenLabel,omitempty"`
	PINFile    string `json:"pinFile,omitempty"`
	// TimeoutMS bounds each KMS call (default 10000).
	TimeoutMS int `json:"timeoutMs,omitempty"`
	// Previous are KEKs that only unwrap (a rotation's old KEKs); not nested.
	Previous []KEKConfig `json:"previous,omitempty"`
}

// resolve fills the file KEK's default path and checks the configuration; kekFile is
// Config.KEKFile, already defaulted.
func (k *KEKConfig) resolve(kekFile string) error {
	if err := k.resolveOne(kekFile); err != nil {
		return err
	}
	seen := map[string]bool{k.key(): true}
	for i := range k.Previous {
		p := &k.Previous[i]
		if len(p.Previous) > 0 {
			return errors.New("config: kek.previous entries cannot have their own previous")
		}
		if p.Type == "" || (p.Type == "file" && p.File == "") {
			return errors.New("config: each kek.previous entry needs a type (and a file for type file)")
		}
		if err := p.resolveOne(kekFile); err != nil {
			return fmt.Errorf("kek.previous[%d]: %w", i, err)
		}
		if seen[p.key()] {
			return fmt.Errorf("config: kek.previous[%d] repeats a KEK already configured", i)
		}
		seen[p.key()] = true
	}
	return nil
}

func (k *KEKConfig) resolveOne(kekFile string) error {
	if k.TimeoutMS < 0 {
		return errors.New("config: kek.timeoutMs must not be negative")
	}
	switch k.Type {
	case "", "file":
		k.Type = "file"
		if k.File == "" {
			k.File = kekFile
		}
	case "aws-kms", "gcp-kms":
		if k.KeyID == "" {
			return fmt.Errorf("config: kek type %s needs a keyId", k.Type)
		}
	case "pkcs11":
		if k.KeyID == "" || k.Module == "" || k.TokenLabel == "" {
			return errors.New("config: kek type pkcs11 needs module, tokenLabel and keyId (the key's label)")
		}
	default:
		return fmt.Errorf("config: kek type %q must be file, aws-kms, gcp-kms or pkcs11", k.Type)
	}
	return nil
}

// key identifies a configured KEK for duplicate checks.
func (k *KEKConfig) key() string {
	return strings.Join([]string{k.Type, k.File, k.KeyID, k.Region, k.Endpoint, k.Module, k.TokenLabel}, "\x00")
}
