package gcs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/gcs"
)

// TestGetBadCRC puts a proxy between the client and the emulator that flips a byte
// of the next n downloads (responses that carry the object's CRC32C in X-Goog-Hash):
// Get reads again after a checksum mismatch and returns the object, and gives up with
// the client's error once every one of its attempts was corrupted.
func TestGetBadCRC(t *testing.T) {
	target, err := url.Parse("http://" + testenv.GCS(t))
	if err != nil {
		t.Fatal(err)
	}
	var corrupt, corrupted atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target) // and the emulator's Host: it reads the bucket from a Host it does not know
	}}
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || !strings.Contains(resp.Header.Get("X-Goog-Hash"), "crc32c=") {
			return nil
		}
		if corrupt.Add(-1) < 0 {
			corrupt.Add(1)
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(body) > 0 {
			body[0] ^= 0xff
			corrupted.Add(1)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL, "http://"))

	var b [8]byte
	rand.Read(b[:])
	ctx := context.Background()
	s, err := gcs.New(ctx, gcs.Config{Bucket: testenv.GCSBucket, Prefix: "t-" + hex.EncodeToString(b[:]) + "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, want := "p/events/checkpoint", []byte("origin\n42\nroot\n")
	if err := s.Put(ctx, key, want, tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}

	corrupt.Store(2)
	got, err := s.Get(ctx, key)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get after two corrupted reads: %q, %v; want %q", got, err, want)
	}
	if n := corrupted.Load(); n != 2 {
		t.Fatalf("the proxy corrupted %d downloads, want 2 (is the checksum checked?)", n)
	}

	corrupt.Store(100)
	corrupted.Store(0)
	if got, err := s.Get(ctx, key); err == nil || !strings.Contains(err.Error(), "bad CRC") {
		t.Fatalf("Get with every read corrupted: %q, %v; want the checksum error", got, err)
	}
	if n := corrupted.Load(); n != 3 {
		t.Fatalf("Get read %d times with every read corrupted, want 3", n)
	}
}
