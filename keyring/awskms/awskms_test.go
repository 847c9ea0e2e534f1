package awskms_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring/awskms"
	"github.com/sealtrail/sealtrail/keyring/wrappertest"
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

	wrappertest.Wrap(t, kek, other)

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

// TestOutage stops the real local-kms under a keyring and brings it back.
func TestOutage(t *testing.T) {
	lk := testenv.StartLocalKMS(t)
	c := client(lk)
	kek, err := awskms.NewWithClient(context.Background(), c, createKey(t, c, ""), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wrappertest.Outage(t, kek, lk.Stop, lk.Start)
}
