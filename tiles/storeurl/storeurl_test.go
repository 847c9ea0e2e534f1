package storeurl_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
	"github.com/sealtrail/sealtrail/tiles/gcs"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tiles/s3"
	"github.com/sealtrail/sealtrail/tiles/storeurl"
)

func TestOpen(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1") // no credentials lookup
	ctx := context.Background()
	dir := t.TempDir()
	for _, tt := range []struct {
		url  string
		want func(tiles.Store) bool
	}{
		{"file://" + filepath.ToSlash(dir), func(s tiles.Store) bool { _, ok := s.(*fs.Store); return ok }},
		{"mem://", func(s tiles.Store) bool { _, ok := s.(*mem.Store); return ok }},
		{"s3://bucket", func(s tiles.Store) bool { return s.(*s3.Store).FullKey("k") == "k" }},
		{"s3://bucket/a/b?endpoint=http://127.0.0.1:9000&path_style=true&region=auto&checksum=when_required", func(s tiles.Store) bool {
			return s.(*s3.Store).FullKey("k") == "a/b/k"
		}},
		{"gs://bucket/pre", func(s tiles.Store) bool { return s.(*gcs.Store).FullKey("k") == "pre/k" }},
	} {
		s, err := storeurl.Open(ctx, tt.url)
		if err != nil {
			t.Errorf("Open(%q): %v", tt.url, err)
			continue
		}
		if !tt.want(s) {
			t.Errorf("Open(%q) = %T, not the store expected", tt.url, s)
		}
	}
	for _, bad := range []string{
		"", "ftp://x", "file://host/path", "file://", "file:///x?y=1", "s3://", "s3://b?unknown=1", "s3://b?path_style=maybe",
		"s3://b?checksum=never", "s3://b/../x", "gs://", "gs://b?endpoint=x", "gs://b/.hidden", "/plain/path",
	} {
		if s, err := storeurl.Open(ctx, bad); err == nil {
			t.Errorf("Open(%q) = %T, want an error", bad, s)
		}
	}
}
