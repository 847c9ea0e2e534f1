//go:build cgo && !no_pkcs11

package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/pkcs11"
)

func init() {
	kekOpeners["pkcs11"] = func(_ context.Context, c KEKConfig) (keyring.Wrapper, func(), error) {
		pin := os.Getenv("SEALTRAIL_PKCS11_PIN")
		if c.PINFile != "" {
			data, err := private.ReadSecret("PKCS#11 PIN file", c.PINFile, maxSecretFile)
			if err != nil {
				return nil, nil, err
			}
			pin = strings.TrimSpace(string(data))
		}
		if pin == "" {
			return nil, nil, errors.New("no PIN: set pinFile or $SEALTRAIL_PKCS11_PIN")
		}
		k, err := pkcs11.New(pkcs11.Config{Module: c.Module, TokenLabel: c.TokenLabel, PIN: pin, KeyLabel: c.KeyID})
		if err != nil {
			return nil, nil, err
		}
		return k, k.Close, nil
	}
}
