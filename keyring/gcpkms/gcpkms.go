// Package gcpkms is a keyring.Wrapper whose key-encryption key is a Google Cloud KMS
// symmetric key (purpose ENCRYPT_DECRYPT): data keys are wrapped and unwrapped by the
// KMS's Encrypt and Decrypt, with the binding of each wrapped key (project, stream,
// epoch, key id) as additional authenticated data, so a wrapped key copied onto
// another row does not decrypt. Every request and answer is checked end to end with
// the CRC32C checksums the API offers. The key never leaves the KMS; Cloud KMS
// decrypts with whichever version encrypted, so rotating the key's versions in the
// KMS needs no rewrap here. See docs/keyring.md.
package gcpkms

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sealtrail/sealtrail/keyring"
)

// KEK wraps data keys with one Cloud KMS crypto key. Its methods may be called
// concurrently.
type KEK struct {
	client  *kms.KeyManagementClient
	name    string
	timeout time.Duration
}

var _ keyring.Wrapper = (*KEK)(nil)

// DefaultTimeout bounds each KMS call when New is given 0.
const DefaultTimeout = 10 * time.Second

// New connects to Cloud KMS (opts: the client's, e.g. option.WithEndpoint; by default
// Application Default Credentials) and checks that name, a crypto key
// "projects/P/locations/L/keyRings/R/cryptoKeys/K", exists with purpose
// ENCRYPT_DECRYPT and an enabled primary version. timeout bounds each call.
func New(ctx context.Context, name string, timeout time.Duration, opts ...option.ClientOption) (*KEK, error) {
	if name == "" {
		return nil, errors.New("gcpkms: a crypto key name is required")
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	client, err := kms.NewKeyManagementClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gcpkms: client: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	key, err := client.GetCryptoKey(cctx, &kmspb.GetCryptoKeyRequest{Name: name})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("gcpkms: get crypto key %s: %w", name, err)
	}
	if key.GetPurpose() != kmspb.CryptoKey_ENCRYPT_DECRYPT {
		client.Close()
		return nil, fmt.Errorf("gcpkms: crypto key %s has purpose %s, not ENCRYPT_DECRYPT", name, key.GetPurpose())
	}
	if p := key.GetPrimary(); p == nil || p.GetState() != kmspb.CryptoKeyVersion_ENABLED {
		client.Close()
		return nil, fmt.Errorf("gcpkms: crypto key %s has no enabled primary version", name)
	}
	return &KEK{client: client, name: name, timeout: timeout}, nil
}

// Close closes the client's connection.
func (k *KEK) Close() error { return k.client.Close() }

// ID returns "gcp-kms:" and the crypto key's name.
func (k *KEK) ID() string { return "gcp-kms:" + k.name }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, castagnoli)))
}

// Wrap encrypts plaintext under the key's primary version with ad as AAD.
func (k *KEK) Wrap(ctx context.Context, plaintext, ad []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	resp, err := k.client.Encrypt(ctx, &kmspb.EncryptRequest{Name: k.name, Plaintext: plaintext, PlaintextCrc32C: crc(plaintext),
		AdditionalAuthenticatedData: ad, AdditionalAuthenticatedDataCrc32C: crc(ad)})
	if err != nil {
		return nil, fmt.Errorf("gcpkms: encrypt with %s: %w", k.name, err)
	}
	if !resp.GetVerifiedPlaintextCrc32C() || !resp.GetVerifiedAdditionalAuthenticatedDataCrc32C() ||
		resp.GetCiphertextCrc32C().GetValue() != crc(resp.GetCiphertext()).GetValue() || len(resp.GetCiphertext()) == 0 {
		return nil, fmt.Errorf("gcpkms: encrypt with %s: the request or answer was corrupted in transit (CRC32C)", k.name)
	}
	return resp.GetCiphertext(), nil
}

// Unwrap decrypts a key Wrap returned, with the same ad. A ciphertext of another key
// or with other ad fails with keyring.ErrUnwrap; an unreachable KMS with its own error.
func (k *KEK) Unwrap(ctx context.Context, wrapped, ad []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	resp, err := k.client.Decrypt(ctx, &kmspb.DecryptRequest{Name: k.name, Ciphertext: wrapped, CiphertextCrc32C: crc(wrapped),
		AdditionalAuthenticatedData: ad, AdditionalAuthenticatedDataCrc32C: crc(ad)})
	if status.Code(err) == codes.InvalidArgument {
		return nil, fmt.Errorf("%w: gcpkms %s: %w", keyring.ErrUnwrap, k.name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("gcpkms: decrypt with %s: %w", k.name, err)
	}
	if resp.GetPlaintextCrc32C().GetValue() != crc(resp.GetPlaintext()).GetValue() {
		return nil, fmt.Errorf("gcpkms: decrypt with %s: the answer was corrupted in transit (CRC32C)", k.name)
	}
	return resp.GetPlaintext(), nil
}
