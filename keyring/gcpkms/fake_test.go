package gcpkms_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"hash/crc32"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fakeKMS is an in-process Cloud KMS: the real gRPC API (kmspb) on a loopback port,
// serving GetCryptoKey, Encrypt and Decrypt for symmetric keys as the service does:
// AES-256-GCM under a key the fake holds, the AAD authenticated, the ciphertext naming
// the key, every CRC32C the client sends checked and every one it may check set.
// down makes every call fail with Unavailable, as an outage would.
type fakeKMS struct {
	kmspb.UnimplementedKeyManagementServiceServer
	addr string
	down atomic.Bool
	mu   sync.Mutex
	keys map[string]*fakeKey // by crypto key name
}

type fakeKey struct {
	purpose kmspb.CryptoKey_CryptoKeyPurpose
	state   kmspb.CryptoKeyVersion_CryptoKeyVersionState
	aead    cipher.AEAD
}

func startFakeKMS(t *testing.T) *fakeKMS {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeKMS{addr: ln.Addr().String(), keys: map[string]*fakeKey{}}
	srv := grpc.NewServer()
	kmspb.RegisterKeyManagementServiceServer(srv, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return f
}

// addKey creates a crypto key with an enabled primary version.
func (f *fakeKMS) addKey(t *testing.T, name string, purpose kmspb.CryptoKey_CryptoKeyPurpose) {
	t.Helper()
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[name] = &fakeKey{purpose: purpose, state: kmspb.CryptoKeyVersion_ENABLED, aead: aead}
}

func (f *fakeKMS) key(name string) (*fakeKey, error) {
	if f.down.Load() {
		return nil, status.Error(codes.Unavailable, "fake KMS is down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "CryptoKey %s not found", name)
	}
	return k, nil
}

func crcOK(b []byte, v *wrapperspb.Int64Value) bool {
	return v == nil || v.GetValue() == int64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func crcOf(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))))
}

func (f *fakeKMS) GetCryptoKey(_ context.Context, req *kmspb.GetCryptoKeyRequest) (*kmspb.CryptoKey, error) {
	k, err := f.key(req.GetName())
	if err != nil {
		return nil, err
	}
	return &kmspb.CryptoKey{Name: req.GetName(), Purpose: k.purpose,
		Primary: &kmspb.CryptoKeyVersion{Name: req.GetName() + "/cryptoKeyVersions/1", State: k.state}}, nil
}

func (f *fakeKMS) Encrypt(_ context.Context, req *kmspb.EncryptRequest) (*kmspb.EncryptResponse, error) {
	k, err := f.key(req.GetName())
	if err != nil {
		return nil, err
	}
	if k.purpose != kmspb.CryptoKey_ENCRYPT_DECRYPT {
		return nil, status.Error(codes.FailedPrecondition, "key is not for ENCRYPT_DECRYPT")
	}
	if !crcOK(req.GetPlaintext(), req.GetPlaintextCrc32C()) || !crcOK(req.GetAdditionalAuthenticatedData(), req.GetAdditionalAuthenticatedDataCrc32C()) {
		return nil, status.Error(codes.DataLoss, "checksum mismatch")
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	ct := append([]byte(req.GetName()+"\x00"), nonce...)
	ct = k.aead.Seal(ct, nonce, req.GetPlaintext(), req.GetAdditionalAuthenticatedData())
	return &kmspb.EncryptResponse{Name: req.GetName() + "/cryptoKeyVersions/1", Ciphertext: ct, CiphertextCrc32C: crcOf(ct),
		VerifiedPlaintextCrc32C: req.GetPlaintextCrc32C() != nil, VerifiedAdditionalAuthenticatedDataCrc32C: req.GetAdditionalAuthenticatedDataCrc32C() != nil}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, req *kmspb.DecryptRequest) (*kmspb.DecryptResponse, error) {
	k, err := f.key(req.GetName())
	if err != nil {
		return nil, err
	}
	if !crcOK(req.GetCiphertext(), req.GetCiphertextCrc32C()) || !crcOK(req.GetAdditionalAuthenticatedData(), req.GetAdditionalAuthenticatedDataCrc32C()) {
		return nil, status.Error(codes.DataLoss, "checksum mismatch")
	}
	invalid := status.Error(codes.InvalidArgument, "Decryption failed: the ciphertext is invalid.")
	keyName, rest, ok := strings.Cut(string(req.GetCiphertext()), "\x00")
	if !ok || keyName != req.GetName() || len(rest) < k.aead.NonceSize() {
		return nil, invalid
	}
	n := k.aead.NonceSize()
	pt, err := k.aead.Open(nil, []byte(rest[:n]), []byte(rest[n:]), req.GetAdditionalAuthenticatedData())
	if err != nil {
		return nil, invalid
	}
	return &kmspb.DecryptResponse{Plaintext: pt, PlaintextCrc32C: crcOf(pt), UsedPrimary: true}, nil
}
