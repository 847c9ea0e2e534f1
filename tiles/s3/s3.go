// Package s3 is the Amazon S3 driver of tiles.Store (aws-sdk-go-v2). It also works
// with S3-compatible services that honour conditional writes (If-None-Match: *):
// MinIO, Cloudflare R2, versitygw; set Config.Endpoint and, for most of them,
// Config.PathStyle. SeaweedFS ignores conditional writes and must not be used.
//
// Credentials come from the SDK's default chain: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE and shared files, or the instance role.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sealtrail/sealtrail/tiles"
)

// Config selects a bucket and how to reach it.
type Config struct {
	Bucket string
	// Prefix is prepended to every key ("" or ending in "/"), so that one bucket can
	// hold several deployments.
	Prefix string
	// Endpoint is the base URL of an S3-compatible service; "" means AWS.
	Endpoint string
	// Region defaults to AWS_REGION, else "us-east-1".
	Region string
	// PathStyle addresses buckets as endpoint/bucket rather than bucket.endpoint.
	PathStyle bool
	// ChecksumWhenRequired sends request checksums only when the operation requires
	// them, for services that reject the SDK's default CRC trailers.
	ChecksumWhenRequired bool
	// AccessKey and SecretKey, when set, are used instead of the default chain.
	AccessKey, SecretKey string
	// MaxAttempts bounds the SDK's retries of throttling, 5xx and network errors;
	// 0 means 5.
	MaxAttempts int
}

// A Store keeps objects in an S3 bucket.
type Store struct {
	c      *awss3.Client
	bucket string
	prefix string
}

var _ tiles.Store = (*Store)(nil)

// New returns a Store for cfg. It does not contact the service.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	if cfg.Prefix != "" && (!strings.HasSuffix(cfg.Prefix, "/") || tiles.CheckKey(strings.TrimSuffix(cfg.Prefix, "/")) != nil) {
		return nil, fmt.Errorf("s3: invalid prefix %q", cfg.Prefix)
	}
	attempts := cfg.MaxAttempts
	if attempts == 0 {
		attempts = 5
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				// Concurrent conditional writes of one key may get 409; retry them.
				o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
					var ae smithy.APIError
					if errors.As(err, &ae) && ae.ErrorCode() == "ConditionalRequestConflict" {
						return aws.TrueTernary
					}
					return aws.UnknownTernary
				}))
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	if cfg.ChecksumWhenRequired {
		opts = append(opts, config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	ac, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS config: %w", err)
	}
	if ac.Region == "" {
		ac.Region = "us-east-1"
	}
	c := awss3.NewFromConfig(ac, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	return &Store{c: c, bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

// Client returns the underlying S3 client.
func (s *Store) Client() *awss3.Client { return s.c }

// FullKey returns the bucket key of key: the Store's prefix and key.
func (s *Store) FullKey(key string) string { return s.prefix + key }

func (s *Store) key(key string) (string, error) {
	if err := tiles.CheckKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Get implements tiles.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	out, err := s.c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3: get %s: %w", k, tiles.ErrNotFound)
		}
		return nil, fmt.Errorf("s3: get %s: %w", k, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3: get %s: read body: %w", k, err)
	}
	return data, nil
}

// GetRange implements tiles.Store with a ranged GetObject (Range: bytes=off-end).
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := tiles.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	out, err := s.c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k), Range: aws.String(rng)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3: get %s: %w", k, tiles.ErrNotFound)
		}
		if isRangeNotSatisfiable(err) {
			return nil, fmt.Errorf("s3: get %s %s: %w", k, rng, tiles.ErrShortObject)
		}
		return nil, fmt.Errorf("s3: get %s %s: %w", k, rng, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, n+1))
	if err != nil {
		return nil, fmt.Errorf("s3: get %s %s: read body: %w", k, rng, err)
	}
	if int64(len(data)) != n {
		// A server answers a range that ends past the object with its tail; one
		// that ignores Range answers the whole object: neither is the range asked.
		if int64(len(data)) < n {
			return nil, fmt.Errorf("s3: get %s %s: %d bytes: %w", k, rng, len(data), tiles.ErrShortObject)
		}
		return nil, fmt.Errorf("s3: get %s %s: the server sent more than the range", k, rng)
	}
	return data, nil
}

// Create implements tiles.Store with a conditional PutObject (If-None-Match: *).
// On 412 the existing object is read and compared, which also makes a retry after
// a lost response succeed.
func (s *Store) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	err = s.put(ctx, k, data, a, true)
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		return fmt.Errorf("s3: create %s: %w", k, err)
	}
	existing, gerr := s.Get(ctx, key)
	if gerr != nil {
		return fmt.Errorf("s3: create %s: exists, but reading it failed: %w", k, gerr)
	}
	if !bytes.Equal(existing, data) {
		return fmt.Errorf("s3: create: %w", &tiles.ConflictError{Key: k})
	}
	return nil
}

// Put implements tiles.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.put(ctx, k, data, a, false); err != nil {
		return fmt.Errorf("s3: put %s: %w", k, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, k string, data []byte, a tiles.Attrs, ifNoneMatch bool) error {
	in := &awss3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(k),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if a.ContentType != "" {
		in.ContentType = aws.String(a.ContentType)
	}
	if a.CacheControl != "" {
		in.CacheControl = aws.String(a.CacheControl)
	}
	if ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := s.c.PutObject(ctx, in)
	return err
}

// Delete implements tiles.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if _, err := s.c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil && !isNotFound(err) {
		return fmt.Errorf("s3: delete %s: %w", k, err)
	}
	return nil
}

func isNotFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		}
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

// EnsureBucket creates the bucket if it does not exist; for tests and first runs
// against a local server.
func (s *Store) EnsureBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := s.c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err == nil {
		return nil
	}
	_, err := s.c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(s.bucket)})
	var ae smithy.APIError
	if err != nil && errors.As(err, &ae) && (ae.ErrorCode() == "BucketAlreadyOwnedByYou" || ae.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("s3: create bucket %s: %w", s.bucket, err)
	}
	return nil
}

// isRangeNotSatisfiable reports a 416: the range starts at or past the object's end.
func isRangeNotSatisfiable(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange" {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}
