// Package storeurl opens a tiles.Store from a URL, the one way the service's
// configuration names its object storage. Only cmd imports it, so that no other
// package links every driver.
//
//	file:///var/lib/sealtrail/objects           filesystem (tiles/fs), the default
//	s3://bucket/prefix?endpoint=URL&region=R&path_style=true&checksum=when_required
//	                                            S3 or an S3-compatible service (tiles/s3)
//	gs://bucket/prefix                          Google Cloud Storage (tiles/gcs)
//	mem://                                      in memory, lost at exit (tests, demos)
//
// See docs/storage.md for credentials, the emulator and cache headers.
package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
	"github.com/sealtrail/sealtrail/tiles/gcs"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tiles/s3"
)

// Open returns the Store rawURL names. It checks the URL but does not contact the
// service (except fs, which creates its directory).
func Open(ctx context.Context, rawURL string) (tiles.Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("storeurl: %w", err)
	}
	q := u.Query()
	allow := func(keys ...string) error {
		for k := range q {
			ok := false
			for _, a := range keys {
				ok = ok || k == a
			}
			if !ok {
				return fmt.Errorf("storeurl: unknown parameter %q in %s URL", k, u.Scheme)
			}
		}
		return nil
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("storeurl: file URL with host %q; use file:///absolute/path", u.Host)
		}
		if err := allow(); err != nil {
			return nil, err
		}
		if u.Path == "" {
			return nil, fmt.Errorf("storeurl: file URL without a path")
		}
		return fs.New(u.Path)
	case "s3":
		if err := allow("endpoint", "region", "path_style", "checksum"); err != nil {
			return nil, err
		}
		cfg := s3.Config{Bucket: u.Host, Endpoint: q.Get("endpoint"), Region: q.Get("region")}
		if cfg.Prefix, err = prefix(u); err != nil {
			return nil, err
		}
		if v := q.Get("path_style"); v != "" {
			if cfg.PathStyle, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("storeurl: path_style=%q: %w", v, err)
			}
		}
		switch v := q.Get("checksum"); v {
		case "", "when_supported":
		case "when_required":
			cfg.ChecksumWhenRequired = true
		default:
			return nil, fmt.Errorf("storeurl: checksum=%q: want when_supported or when_required", v)
		}
		return s3.New(ctx, cfg)
	case "gs":
		if err := allow(); err != nil {
			return nil, err
		}
		cfg := gcs.Config{Bucket: u.Host}
		if cfg.Prefix, err = prefix(u); err != nil {
			return nil, err
		}
		return gcs.New(ctx, cfg)
	case "mem":
		return mem.New(), nil
	default:
		return nil, fmt.Errorf("storeurl: unknown scheme in %q: want file, s3, gs or mem", rawURL)
	}
}

// prefix turns a URL path "/a/b" into the key prefix "a/b/".
func prefix(u *url.URL) (string, error) {
	if u.Host == "" {
		return "", fmt.Errorf("storeurl: %s URL without a bucket", u.Scheme)
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return "", nil
	}
	if err := tiles.CheckKey(p); err != nil {
		return "", fmt.Errorf("storeurl: prefix %q: %w", p, err)
	}
	return p + "/", nil
}
