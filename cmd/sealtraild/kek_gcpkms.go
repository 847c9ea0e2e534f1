//go:build !no_gcpkms

package main

import (
	"context"

	"google.golang.org/api/option"

	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/gcpkms"
)

func init() {
	kekOpeners["gcp-kms"] = func(ctx context.Context, c KEKConfig) (keyring.Wrapper, func(), error) {
		var opts []option.ClientOption
		if c.Endpoint != "" {
			opts = append(opts, option.WithEndpoint(c.Endpoint))
		}
		k, err := gcpkms.New(ctx, c.KeyID, c.timeout(), opts...)
		if err != nil {
			return nil, nil, err
		}
		return k, func() { _ = k.Close() }, nil
	}
}
