package keyring

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sealtrail/sealtrail/catalog"
)

// NonceSize is the size of a commitment's blinding nonce.
const NonceSize = 32

// PayloadAD is the additional data that binds a payload ciphertext to its event: the
// project, the stream, the sequence and the event id. A ciphertext moved to another
// event, stream or project fails to decrypt.
func PayloadAD(log catalog.LogID, sequence uint64, eventID string) []byte {
	return lengthPrefixed("sealtrail/payload-ad/v1", log.ProjectID, string(log.Stream),
		strconv.FormatUint(sequence, 10), eventID)
}

// SealPayload encrypts the stored form of an event's payload: the commitment's nonce
// followed by the payload's canonical JSON, the very bytes whose SHA-256 is the
// commitment. Keeping the nonce inside the ciphertext means destroying the epoch's key
// destroys the nonce too, so a shredded commitment cannot be dictionary-attacked.
func (k *Keyring) SealPayload(ctx context.Context, log catalog.LogID, epoch string, sequence uint64, eventID string,
	nonce [NonceSize]byte, payloadJCS []byte) ([]byte, error) {
	pt := make([]byte, 0, NonceSize+len(payloadJCS))
	pt = append(append(pt, nonce[:]...), payloadJCS...)
	return k.Encrypt(ctx, log, epoch, pt, PayloadAD(log, sequence, eventID))
}

// OpenPayload decrypts what SealPayload made for the same event and returns the nonce
// and the payload's canonical JSON. After shredding it fails with ErrShredded.
func (k *Keyring) OpenPayload(ctx context.Context, log catalog.LogID, sequence uint64, eventID string,
	ciphertext []byte) (nonce [NonceSize]byte, payloadJCS []byte, err error) {
	pt, err := k.Decrypt(ctx, log, ciphertext, PayloadAD(log, sequence, eventID))
	if err != nil {
		return nonce, nil, err
	}
	if len(pt) < NonceSize {
		return nonce, nil, fmt.Errorf("%w: payload of %s #%d shorter than its nonce", ErrDecrypt, log, sequence)
	}
	copy(nonce[:], pt)
	return nonce, pt[NonceSize:], nil
}
