package s3_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/s3"
	"github.com/sealtrail/sealtrail/tiles/storetest"
)

// newStore returns a Store over a fresh random prefix of the test server's bucket.
func newStore(t *testing.T, srv testenv.S3Server) *s3.Store {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	s, err := s3.New(t.Context(), s3.Config{
		Bucket: srv.Bucket, Prefix: "t-" + hex.EncodeToString(b[:]) + "/", Endpoint: srv.Endpoint,
		Region: srv.Region, PathStyle: true, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	srv := testenv.S3(t)
	storetest.Run(t, func(t *testing.T) tiles.Store { return newStore(t, srv) }, storetest.Options{})
}

// TestHeaders checks that objects carry the attributes mirrors rely on.
func TestHeaders(t *testing.T) {
	srv := testenv.S3(t)
	s := newStore(t, srv)
	ctx := context.Background()
	if err := s.Create(ctx, "p/events/tile/0/000.p/1", make([]byte, 32), tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "p/events/checkpoint", []byte("cp\n"), tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]tiles.Attrs{"p/events/tile/0/000.p/1": tiles.ImmutableAttrs, "p/events/checkpoint": tiles.CheckpointAttrs} {
		out, err := s.Client().GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(s.FullKey(key))})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, out.Body)
		out.Body.Close()
		if aws.ToString(out.CacheControl) != want.CacheControl || aws.ToString(out.ContentType) != want.ContentType {
			t.Errorf("%s: Cache-Control %q, Content-Type %q; want %+v", key, aws.ToString(out.CacheControl), aws.ToString(out.ContentType), want)
		}
	}
}
