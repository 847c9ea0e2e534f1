package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestKEKRotationToAWSKMS runs the built service against the real local-kms, on both
// catalogs: it starts on the local KEK file, moves to an AWS KMS key with the file as
// the previous KEK, rewraps every data key through `sealtraild admin kek rewrap` while
// serving, then runs with the KMS key alone and the key file gone, and every payload
// still opens. Then the KMS goes away: an event that needs a new data key fails with
// 500 and nothing of it is recorded, and once the KMS is back the same request is
// sealed.
func TestKEKRotationToAWSKMS(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		ctx := context.Background()
		lk := testenv.StartLocalKMS(t)
		client := kms.New(kms.Options{Region: lk.Region, BaseEndpoint: aws.String(lk.Endpoint),
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
		key, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("sealtrail KEK")})
		if err != nil {
			t.Fatal(err)
		}
		arn := *key.KeyMetadata.Arn
		dir := t.TempDir()
		dataDir := filepath.Join(dir, "data")
		kekJSON := func(previous bool) string {
			k := map[string]any{"type": "aws-kms", "keyId": arn, "region": lk.Region, "endpoint": lk.Endpoint, "timeoutMs": 3000}
			if previous {
				k["previous"] = []any{map[string]any{"type": "file", "file": filepath.Join(dataDir, "kek.key")}}
			}
			b, err := json.Marshal(k)
			if err != nil {
				t.Fatal(err)
			}
			return "SEALTRAIL_KEK=" + string(b)
		}
		awsEnv := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}

		// 1. The local KEK file.
		s := startServer(t, serveOpts{dir: dir, env: c.env()})
		p := s.newProject("kek-" + c.name)
		s.mustPost(p.all, event("user.login", "alice"))
		s.stop()

		// 2. The KMS key is current, the file previous: old payloads open, new keys
		// are the KMS's, and a rewrap moves the rest.
		s = startServer(t, serveOpts{dir: dir, env: c.env(append([]string{kekJSON(true)}, awsEnv...)...)})
		payloads(t, s, p.all, 1)
		st := s.mustCLI("ops", "kek", "status")
		if st["currentKek"] != "aws-kms:"+arn || st["remaining"].(float64) < 2 {
			t.Fatalf("kek status before the rewrap: %v", st)
		}
		if r := s.mustCLI("ops", "kek", "rewrap"); r["started"] != true {
			t.Fatalf("kek rewrap: %v", r)
		}
		s.mustPost(p.all, event("user.logout", "alice")) // serving while it runs
		deadline := time.Now().Add(time.Minute)
		for st = s.mustCLI("ops", "kek", "status"); st["running"] == true || st["remaining"].(float64) != 0; st = s.mustCLI("ops", "kek", "status") {
			if st["error"] != nil || time.Now().After(deadline) {
				t.Fatalf("kek status after the rewrap: %v", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
		p2 := s.newProject("kek-2-" + c.name) // its audit stream's key comes from the KMS
		s.stop()

		// 3. The KMS key alone; the old KEK is gone.
		if err := os.Rename(filepath.Join(dataDir, "kek.key"), filepath.Join(dir, "kek.key.retired")); err != nil {
			t.Fatal(err)
		}
		s = startServer(t, serveOpts{dir: dir, env: c.env(append([]string{kekJSON(false)}, awsEnv...)...)})
		payloads(t, s, p.all, 2)

		// 4. The KMS goes away. p2's events stream has no data key yet.
		lk.Stop()
		r := s.api(http.MethodPost, "/log", p2.all, event("user.login", "bob"))
		wantError(t, "ingest without the KMS", r, http.StatusInternalServerError, "")
		if n := checkpointSize(t, dataDir, s.pub, p2.id, catalog.StreamEvents); n != 0 {
			t.Fatalf("the failed ingest left a checkpoint of size %d", n)
		}
		if evs := s.mustGet(p2.all, "/events").body["events"].([]any); len(evs) != 0 {
			t.Fatalf("the failed ingest left events: %v", evs)
		}
		lk.Start()
		s.mustPost(p2.all, event("user.login", "bob"))
		if n := waitCheckpointSize(t, dataDir, s.pub, p2.id, catalog.StreamEvents, 1); n != 1 {
			t.Fatalf("checkpoint size %d after the KMS came back, want 1", n)
		}
		payloads(t, s, p2.all, 1)
		s.stop()
	})
}

// payloads requires want events from GET /events, each with its payload opened (a
// payloadNonce, which only decryption yields).
func payloads(t *testing.T, s *server, token string, want int) {
	t.Helper()
	evs := s.mustGet(token, "/events").body["events"].([]any)
	if len(evs) != want {
		t.Fatalf("%d events, want %d", len(evs), want)
	}
	for _, e := range evs {
		if n, _ := e.(map[string]any)["payloadNonce"].(string); n == "" {
			t.Fatalf("event without its opened payload: %v", e)
		}
	}
}
