//go:build !no_awskms

package main

import (
	"context"

	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/awskms"
)

func init() {
	kekOpeners["aws-kms"] = func(ctx context.Context, c KEKConfig) (keyring.Wrapper, func(), error) {
		k, err := awskms.New(ctx, awskms.Config{KeyID: c.KeyID, Region: c.Region, Endpoint: c.Endpoint, Timeout: c.timeout()})
		return k, func() {}, err
	}
}
