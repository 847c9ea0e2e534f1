package testenv

import (
	"net/url"
	"os"
	"testing"
)

// An S3Server is the S3-compatible server scripts/testenv/s3.sh started (versitygw).
type S3Server struct {
	URL       string // s3://bucket?endpoint=...&path_style=true&region=...
	Bucket    string
	Endpoint  string
	Region    string
	AccessKey string
	SecretKey string
}

// URLWithPrefix returns the server's s3:// URL with a key prefix after the bucket, for
// a test that opens the store by URL (storeurl.Open, or the sealtraild binary, which
// also needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set to AccessKey and
// SecretKey).
func (s S3Server) URLWithPrefix(prefix string) string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return s.URL
	}
	u.Path = "/" + prefix
	return u.String()
}

// S3 returns the test S3 server from SEALTRAIL_TEST_S3 (and its _ACCESS_KEY and
// _SECRET_KEY companions), skipping the test without one (failing under CI=true).
func S3(t testing.TB) S3Server {
	t.Helper()
	raw := Require(t, "SEALTRAIL_TEST_S3", "S3-compatible server")
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		t.Fatalf("SEALTRAIL_TEST_S3=%q is not an s3://bucket?endpoint=... URL", raw)
	}
	q := u.Query()
	return S3Server{
		URL:       raw,
		Bucket:    u.Host,
		Endpoint:  q.Get("endpoint"),
		Region:    q.Get("region"),
		AccessKey: os.Getenv("SEALTRAIL_TEST_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("SEALTRAIL_TEST_S3_SECRET_KEY"),
	}
}
