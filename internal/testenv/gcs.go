package testenv

import "testing"

// GCSBucket is the bucket scripts/testenv/gcs.sh creates in the emulator.
const GCSBucket = "sealtrail-test"

// GCS returns the host:port of the GCS emulator (fake-gcs-server) from
// SEALTRAIL_TEST_GCS, to be set as STORAGE_EMULATOR_HOST, skipping the test without
// one (failing under CI=true). The emulator has the bucket GCSBucket.
func GCS(t testing.TB) string {
	t.Helper()
	return Require(t, "SEALTRAIL_TEST_GCS", "GCS emulator (fake-gcs-server)")
}

// GCSURL returns the gs:// URL of a key prefix in the emulator's bucket. A process
// opening it needs STORAGE_EMULATOR_HOST set to the value GCS returns.
func GCSURL(prefix string) string { return "gs://" + GCSBucket + "/" + prefix }
