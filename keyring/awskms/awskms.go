// Package awskms is a keyring.Wrapper whose key-encryption key is a symmetric AWS KMS
// key: data keys are wrapped and unwrapped by the KMS's Encrypt and Decrypt, with an
// encryption context that binds each wrapped key to its project, stream, epoch and
// key id (keyring.BindingContext), so CloudTrail names the project-stream of every
// unwrap and a wrapped key copied onto another row does not decrypt. The key never
// leaves the KMS. See docs/keyring.md.
package awskms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/sealtrail/sealtrail/keyring"
)

// Config names the KMS key and how to reach it.
type Config struct {
	// KeyID is the key's id, ARN, alias ("alias/name") or alias ARN. It is resolved to
	// the key's ARN at start, which becomes the wrapper's ID.
	KeyID string
	// Region is the key's region (default: the SDK's, from the environment).
	Region string
	// Endpoint overrides the KMS endpoint URL (a VPC endpoint, or local-kms in tests).
	Endpoint string
	// Timeout bounds each KMS call, retries included (default 10 s).
	Timeout time.Duration
}

// KEK wraps data keys with one AWS KMS key. Its methods may be called concurrently.
type KEK struct {
	client  *kms.Client
	arn     string
	timeout time.Duration
}

var _ keyring.Wrapper = (*KEK)(nil)

// New connects with the SDK's default credentials (environment, shared files, the
// instance or task role) and checks the key: it must exist, be enabled and be a
// symmetric encryption key.
func New(ctx context.Context, cfg Config) (*KEK, error) {
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("awskms: AWS configuration: %w", err)
	}
	client := kms.NewFromConfig(awsCfg, func(o *kms.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return NewWithClient(ctx, client, cfg.KeyID, cfg.Timeout)
}

// NewWithClient is New with a client the caller built; timeout 0 is 10 s.
func NewWithClient(ctx context.Context, client *kms.Client, keyID string, timeout time.Duration) (*KEK, error) {
	if keyID == "" {
		return nil, errors.New("awskms: a key id is required")
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := client.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(keyID)})
	if err != nil {
		return nil, fmt.Errorf("awskms: describe key %s: %w", keyID, err)
	}
	md := out.KeyMetadata
	switch {
	case md == nil || md.Arn == nil:
		return nil, fmt.Errorf("awskms: key %s: no metadata in the answer", keyID)
	case md.KeyState != types.KeyStateEnabled:
		return nil, fmt.Errorf("awskms: key %s is %s, not Enabled", *md.Arn, md.KeyState)
	case md.KeyUsage != types.KeyUsageTypeEncryptDecrypt:
		return nil, fmt.Errorf("awskms: key %s is for %s, not ENCRYPT_DECRYPT", *md.Arn, md.KeyUsage)
	case md.KeySpec != "" && md.KeySpec != types.KeySpecSymmetricDefault:
		return nil, fmt.Errorf("awskms: key %s is %s, not SYMMETRIC_DEFAULT", *md.Arn, md.KeySpec)
	}
	return &KEK{client: client, arn: *md.Arn, timeout: timeout}, nil
}

// ID returns "aws-kms:" and the key's ARN.
func (k *KEK) ID() string { return "aws-kms:" + k.arn }

// Wrap encrypts plaintext under the key with ad as the encryption context.
func (k *KEK) Wrap(ctx context.Context, plaintext, ad []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	out, err := k.client.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(k.arn), Plaintext: plaintext,
		EncryptionContext: keyring.BindingContext(ad)})
	if err != nil {
		return nil, fmt.Errorf("awskms: encrypt with %s: %w", k.arn, err)
	}
	if len(out.CiphertextBlob) == 0 {
		return nil, fmt.Errorf("awskms: encrypt with %s: empty ciphertext", k.arn)
	}
	return out.CiphertextBlob, nil
}

// Unwrap decrypts a key Wrap returned, with the same ad. A ciphertext of another key
// or with other ad fails with keyring.ErrUnwrap; an unreachable KMS with its own error.
func (k *KEK) Unwrap(ctx context.Context, wrapped, ad []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(k.arn), CiphertextBlob: wrapped,
		EncryptionContext: keyring.BindingContext(ad)})
	var (
		badCT  *types.InvalidCiphertextException
		badKey *types.IncorrectKeyException
	)
	switch {
	case errors.As(err, &badCT), errors.As(err, &badKey):
		return nil, fmt.Errorf("%w: awskms %s: %w", keyring.ErrUnwrap, k.arn, err)
	case err != nil:
		return nil, fmt.Errorf("awskms: decrypt with %s: %w", k.arn, err)
	}
	return out.Plaintext, nil
}
