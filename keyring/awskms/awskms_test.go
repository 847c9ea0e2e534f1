package awskms_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/awskms"
)

func client(k *testenv.LocalKMS) *kms.Client {
	return kms.New(kms.Options{Region: k.Region, BaseEndpoint: aws.String(k.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

func createKey(t *testing.T, c *kms.Client, alias string) string {
	t.Helper()
	ctx := context.Background()
	out, err := c.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("sealtrail test KEK")})
	if err != nil {
		t.Fatal(err)
	}
	if alias != "" {
		if _, err := c.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: out.KeyMetadata.KeyId}); err != nil {
			t.Fatal(err)
		}
	}
	return *out.KeyMetadata.Arn
}

func TestWrapper(t *testing.T) {
	ctx := context.Background()
	lk := testenv.StartLocalKMS(t)
	c := client(lk)
	arn := createKey(t, c, "alias/sealtrail-test")
	otherARN := createKey(t, c, "")

	// New, as the service calls it: credentials and region from the environment, the
	// key named by its alias and resolved to its ARN.
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	kek, err := awskms.New(ctx, awskms.Config{KeyID: "alias/sealtrail-test", Region: lk.Region, Endpoint: lk.Endpoint, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if kek.ID() != "aws-kms:"+arn {
		t.Fatalf("ID = %s, want aws-kms:%s", kek.ID(), arn)
	}
	other, err := awskms.NewWithClient(ctx, c, otherARN, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	secret := bytes.Repeat([]byte{7}, 32)
	ad := []byte("binding")
	w, err := kek.Wrap(ctx, secret, ad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(w, secret) {
		t.Fatal("wrapped key contains the secret")
	}
	if got, err := kek.Unwrap(ctx, w, ad); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Unwrap = %x, %v", got, err)
	}
	for name, f := range map[string]func() ([]byte, error){
		"other ad":        func() ([]byte, error) { return kek.Unwrap(ctx, w, []byte("other binding")) },
		"other key":       func() ([]byte, error) { return other.Unwrap(ctx, w, ad) },
		"damaged wrapped": func() ([]byte, error) { return kek.Unwrap(ctx, append([]byte{1}, w[1:]...), ad) },
	} {
		if got, err := f(); !errors.Is(err, keyring.ErrUnwrap) {
			t.Errorf("%s: %x, %v; want ErrUnwrap", name, got, err)
		}
	}

	for name, id := range map[string]string{"unknown key": "alias/none", "empty id": ""} {
		if _, err := awskms.NewWithClient(ctx, c, id, 5*time.Second); err == nil {
			t.Errorf("%s: NewWithClient succeeded", name)
		}
	}
	if _, err := c.DisableKey(ctx, &kms.DisableKeyInput{KeyId: aws.String(otherARN)}); err != nil {
		t.Fatal(err)
	}
	if _, err := awskms.NewWithClient(ctx, c, otherARN, 5*time.Second); err == nil {
		t.Error("NewWithClient accepted a disabled key")
	}
}

// TestOutage runs a keyring on the KMS, stops the KMS and brings it back: without it a
// data key can be neither created nor unwrapped, and afterwards both work again.
func TestOutage(t *testing.T) {
	ctx := context.Background()
	lk := testenv.StartLocalKMS(t)
	c := client(lk)
	kek, err := awskms.NewWithClient(ctx, c, createKey(t, c, ""), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	log := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	ct, err := keyring.New(db, kek, keyring.Options{}).Encrypt(ctx, log, "2026-11", []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := db.DataKey(ctx, log, "2026-11")
	if err != nil || k.KEKID != kek.ID() {
		t.Fatalf("stored key: %+v, %v", k, err)
	}

	lk.Stop()
	kr := keyring.New(db, kek, keyring.Options{}) // a fresh cache, as a restarted replica has
	if _, err := kr.Encrypt(ctx, log, "2026-12", []byte("payload"), nil); err == nil {
		t.Fatal("a new data key was created without the KMS")
	}
	if _, err := db.DataKey(ctx, log, "2026-12"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a failed creation stored a key: %v", err)
	}
	if _, err := kr.Decrypt(ctx, log, ct, nil); err == nil || errors.Is(err, keyring.ErrUnwrap) {
		t.Fatalf("decrypt without the KMS: %v; want a KMS error, not ErrUnwrap", err)
	}

	lk.Start()
	if pt, err := kr.Decrypt(ctx, log, ct, nil); err != nil || string(pt) != "payload" {
		t.Fatalf("decrypt after the KMS came back: %q, %v", pt, err)
	}
	if _, err := kr.Encrypt(ctx, log, "2026-12", []byte("payload"), nil); err != nil {
		t.Fatalf("encrypt after the KMS came back: %v", err)
	}
}
