package testenv

import "testing"

func TestS3URLWithPrefix(t *testing.T) {
	s := S3Server{URL: "s3://b?endpoint=http://127.0.0.1:9&path_style=true"}
	if got, want := s.URLWithPrefix("t1/x"), "s3://b/t1/x?endpoint=http://127.0.0.1:9&path_style=true"; got != want {
		t.Fatalf("URLWithPrefix = %q, want %q", got, want)
	}
	if got := GCSURL("t2"); got != "gs://sealtrail-test/t2" {
		t.Fatalf("GCSURL = %q", got)
	}
}
