package gcpkms_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/gcpkms"
	"github.com/sealtrail/sealtrail/keyring/wrappertest"
)

const keyName = "projects/p/locations/global/keyRings/sealtrail/cryptoKeys/kek"

func connect(t *testing.T, f *fakeKMS, name string) (*gcpkms.KEK, error) {
	t.Helper()
	k, err := gcpkms.New(context.Background(), name, 2*time.Second, option.WithEndpoint(f.addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err == nil {
		t.Cleanup(func() { k.Close() })
	}
	return k, err
}

// setup starts a fake KMS with one key and connects to it.
func setup(t *testing.T) (*fakeKMS, *gcpkms.KEK) {
	t.Helper()
	f := startFakeKMS(t)
	f.addKey(t, keyName, kmspb.CryptoKey_ENCRYPT_DECRYPT)
	kek, err := connect(t, f, keyName)
	if err != nil {
		t.Fatal(err)
	}
	return f, kek
}

func TestWrapper(t *testing.T) {
	f, kek := setup(t)
	f.addKey(t, keyName+"2", kmspb.CryptoKey_ENCRYPT_DECRYPT)
	f.addKey(t, keyName+"-sign", kmspb.CryptoKey_ASYMMETRIC_SIGN)
	other, err := connect(t, f, keyName+"2")
	if err != nil {
		t.Fatal(err)
	}
	if kek.ID() != "gcp-kms:"+keyName {
		t.Fatalf("ID = %s", kek.ID())
	}
	wrappertest.Wrap(t, kek, other)
	for name, n := range map[string]string{"unknown key": keyName + "-none", "signing key": keyName + "-sign", "no name": ""} {
		if _, err := connect(t, f, n); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// TestOutage takes the fake KMS down under a keyring and brings it back.
func TestOutage(t *testing.T) {
	f, kek := setup(t)
	wrappertest.Outage(t, kek, func() { f.down.Store(true) }, func() { f.down.Store(false) })
}

// TestRotateFromFile moves data keys from a local KEK file to Cloud KMS.
func TestRotateFromFile(t *testing.T) {
	ctx := context.Background()
	_, kek := setup(t)
	fileKEK := wrappertest.FileKEK(t)
	db, log := wrappertest.Catalog(t), wrappertest.Log
	var cts [][]byte
	for _, e := range []string{"2026-09", "2026-10", "2026-11"} {
		ct, err := keyring.New(db, fileKEK, keyring.Options{}).Encrypt(ctx, log, e, []byte(e), nil)
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
	}
	st, err := keyring.New(db, kek, keyring.Options{Previous: []keyring.Wrapper{fileKEK}}).Rewrap(ctx, db, nil)
	if err != nil || st.Rewrapped != 3 {
		t.Fatalf("Rewrap = %+v, %v", st, err)
	}
	only := keyring.New(db, kek, keyring.Options{})
	for i, ct := range cts {
		if _, err := only.Decrypt(ctx, log, ct, nil); err != nil {
			t.Fatalf("payload %d after the rotation: %v", i, err)
		}
	}
}
