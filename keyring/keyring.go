// Package keyring encrypts event payloads under per-project-stream, per-epoch data keys,
// so that retention can crypto-shred a whole epoch (a UTC day or month of receive time)
// by destroying one key, while leaves and commitments stay in the tree.
//
// Data keys are 32 random bytes, stored in the catalog only wrapped by a key-encryption
// key (a Wrapper: a local key file now, a cloud KMS later), and cached unwrapped in
// memory with a size bound and a time bound. A ciphertext names its epoch and key id,
// so Decrypt needs only the project-stream and the additional data.
//
// Ciphertext format, version 1 (all of it before the sealed bytes is authenticated):
//
//	0x01 | len(epoch) (1 byte) | epoch | key id (16 bytes) | salt (12 bytes) | nonce (12 bytes) | AES-256-GCM(sealed, tag)
//
// The GCM key of each message is HKDF-Expand-SHA256(data key, "sealtrail/payload/v1" ||
// salt), so the 192 random bits of salt and nonce never repeat under one key, however
// many billions of events an epoch holds. The sequencer encrypts a batch with one
// Sealer, whose messages share a salt (one derived key per batch) and differ in nonce. The GCM additional data is the header
// followed by the caller's; PayloadAD binds a payload to its project, stream, sequence
// and event id, so ciphertexts cannot be swapped between events.
//
// See docs/keyring.md.
package keyring

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// Errors of the keyring; test them with errors.Is.
var (
	// ErrShredded: the epoch's data key was destroyed; the payload is gone for good.
	ErrShredded = errors.New("keyring: data key destroyed (payload shredded)")
	// ErrUnknownKey: no data key exists for the ciphertext's epoch and key id.
	ErrUnknownKey = errors.New("keyring: unknown data key")
	// ErrWrongKEK: the data key was wrapped by another key-encryption key.
	ErrWrongKEK = errors.New("keyring: data key wrapped by another KEK")
	// ErrUnwrap: the KEK failed to unwrap a data key (wrong KEK or damaged row).
	ErrUnwrap = errors.New("keyring: cannot unwrap data key")
	// ErrDecrypt: the ciphertext is malformed, tampered with, or bound to other
	// additional data (another event).
	ErrDecrypt = errors.New("keyring: cannot decrypt")
)

// Store is what the keyring needs from the catalog; both catalog drivers provide it.
type Store interface {
	// InsertDataKey stores k unless (k.Log, k.Epoch) has a key, and returns the stored
	// key (destroyed ones included) either way.
	InsertDataKey(ctx context.Context, k catalog.DataKey) (catalog.DataKey, error)
	// DataKey returns the key of (log, epoch) or an error wrapping catalog.ErrNotFound.
	DataKey(ctx context.Context, log catalog.LogID, epoch string) (catalog.DataKey, error)
	// DestroyDataKey deletes the wrapped key for good and marks it destroyed.
	DestroyDataKey(ctx context.Context, log catalog.LogID, epoch string, at time.Time) (catalog.DataKey, error)
}

// BatchStore is a Store that can store several new data keys in one write (both
// catalog drivers are); PrepareAt uses it.
type BatchStore interface {
	Store
	// InsertDataKeys is InsertDataKey for each of ks, all or none, in one write; the
	// stored keys come back in the order of ks.
	InsertDataKeys(ctx context.Context, ks []catalog.DataKey) ([]catalog.DataKey, error)
}

// Granularity is the length of a retention epoch.
type Granularity int

// Epoch lengths. Shorter epochs shred more precisely and keep fewer messages under
// one key; longer ones mean fewer keys.
const (
	Monthly Granularity = iota // "2006-01"
	Daily                      // "2006-01-02"
)

// Epoch returns the epoch of receive time t: its UTC month or day.
func (g Granularity) Epoch(t time.Time) string {
	if g == Daily {
		return t.UTC().Format("2006-01-02")
	}
	return t.UTC().Format("2006-01")
}

// Options tune New; zero values take the defaults.
type Options struct {
	// CacheSize bounds the unwrapped keys held in memory (default 1024).
	CacheSize int
	// CacheTTL bounds how long an unwrapped key is used without re-reading the catalog,
	// and so how long a replica can still decrypt an epoch another replica destroyed
	// (default 5 minutes).
	CacheTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Granularity is the epoch length Seal uses (default Monthly).
	Granularity Granularity
	// Previous are KEKs that only unwrap: those a KEK rotation is moving data keys
	// away from (see Rewrap). New data keys are always wrapped by the current KEK.
	Previous []Wrapper
}

// Keyring encrypts and decrypts payloads. Its methods may be called concurrently.
type Keyring struct {
	store Store
	kek   Wrapper
	// unwrappers are the current KEK and the previous ones, by ID.
	unwrappers map[string]Wrapper
	cache      *lru
	now        func() time.Time
	gran       Granularity
}

// New returns a keyring over store, wrapping keys with kek.
func New(store Store, kek Wrapper, opts Options) *Keyring {
	if opts.CacheSize <= 0 {
		opts.CacheSize = 1024
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	unwrappers := map[string]Wrapper{}
	for _, w := range opts.Previous {
		unwrappers[w.ID()] = w
	}
	unwrappers[kek.ID()] = kek
	return &Keyring{store: store, kek: kek, unwrappers: unwrappers, cache: newLRU(opts.CacheSize, opts.CacheTTL),
		now: opts.Now, gran: opts.Granularity}
}

const (
	version    = 1
	keyIDSize  = 16
	saltSize   = 12
	nonceSize  = 12
	maxEpoch   = 64
	dataKeyLen = 32
)

// Encrypt seals plaintext under the data key of (log, epoch), creating the key if the
// epoch has none. ad is authenticated, not encrypted; Decrypt needs the same ad. An
// epoch whose key was destroyed refuses new payloads with ErrShredded.
func (k *Keyring) Encrypt(ctx context.Context, log catalog.LogID, epoch string, plaintext, ad []byte) ([]byte, error) {
	s, err := k.NewSealer(ctx, log, epoch)
	if err != nil {
		return nil, err
	}
	return s.Seal(plaintext, ad)
}

// A Sealer encrypts many payloads under one epoch's data key and one random salt, so
// the message key is derived once (HKDF, then the AES key schedule) rather than once
// per payload; each payload still gets a fresh random 96-bit nonce. Its ciphertexts
// have the same format as Encrypt's (they merely share a salt) and Decrypt opens them
// alike. Random nonces under one key are safe to about 2^32 messages (NIST SP
// 800-38D, 8.3); NewSealer hands out the same Sealer again until it has sealed
// sealerMessages. Its Seal may be called concurrently.
type Sealer struct {
	hdr  []byte // version, epoch, key id and salt; the nonce follows
	aead cipher.AEAD
	used atomic.Int64 // payloads sealed
}

// sealerMessages is how many payloads a Sealer seals before NewSealer makes a new one,
// with a new salt: 2^24, so that with the largest batch after the last check a message
// key stays far below the 2^32 random nonces NIST SP 800-38D allows (a nonce collision
// among 2^24 random 96-bit nonces has a probability of about 2^-49). Reusing the
// Sealer across batches spares each batch the derivation: with a thousand
// project-streams of one event a tick it was about 3% of the service's CPU.
const sealerMessages = 1 << 24

// NewSealer returns a Sealer for the data key of (log, epoch), creating the key if the
// epoch has none; an epoch whose key was destroyed fails with ErrShredded.
func (k *Keyring) NewSealer(ctx context.Context, log catalog.LogID, epoch string) (*Sealer, error) {
	if epoch == "" || len(epoch) > maxEpoch {
		return nil, fmt.Errorf("keyring: epoch %q must be 1 to %d bytes", epoch, maxEpoch)
	}
	dk, err := k.key(ctx, log, epoch, true)
	if err != nil {
		return nil, err
	}
	if s := dk.sealer.Load(); s != nil && s.used.Load() < sealerMessages {
		return s, nil
	}
	idBytes, err := hex.DecodeString(dk.keyID)
	if err != nil || len(idBytes) != keyIDSize {
		return nil, fmt.Errorf("keyring: stored key id %q of %s %s is malformed", dk.keyID, log, epoch)
	}
	hdr := make([]byte, 0, 2+len(epoch)+keyIDSize+saltSize)
	hdr = append(hdr, version, byte(len(epoch)))
	hdr = append(hdr, epoch...)
	hdr = append(hdr, idBytes...)
	salt := make([]byte, saltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("keyring: salt: %w", err)
	}
	hdr = append(hdr, salt...)
	aead, err := messageAEAD(dk.secret, salt)
	if err != nil {
		return nil, err
	}
	s := &Sealer{hdr: hdr, aead: aead}
	dk.sealer.Store(s)
	return s, nil
}

// PrepareAt makes sure the data keys of logs for the epoch of receive time at are at
// hand, creating those that epoch does not have yet all at once: with a BatchStore,
// one catalog write for all of them, where NewSealer writes one per key. The
// sequencer calls it before a tick's builds, so a tick holding the first events of
// many new project-streams commits their keys once instead of once each. Keys that
// exist but are not cached are read and cached as NewSealer would; a problem with
// one key is left to NewSealer, which reports it for its own stream. An error means
// the batch was not stored, and NewSealer creates the keys one by one as before.
func (k *Keyring) PrepareAt(ctx context.Context, logs []catalog.LogID, at time.Time) error {
	bs, ok := k.store.(BatchStore)
	if !ok || len(logs) < 2 {
		return nil
	}
	epoch, now := k.gran.Epoch(at), k.now()
	var (
		rows    []catalog.DataKey
		secrets [][]byte
	)
	for _, log := range logs {
		// Cached, or stored and now cached, or a problem of its own (destroyed,
		// unreadable) that NewSealer reports for its stream.
		if _, err := k.key(ctx, log, epoch, false); !errors.Is(err, ErrUnknownKey) {
			continue
		}
		row, secret, err := k.newKey(ctx, log, epoch)
		if err != nil {
			return fmt.Errorf("keyring: data key %s %s: %w", log, epoch, err)
		}
		rows, secrets = append(rows, row), append(secrets, secret)
	}
	if len(rows) == 0 {
		return nil
	}
	stored, err := bs.InsertDataKeys(ctx, rows)
	if err != nil {
		return fmt.Errorf("keyring: %d data keys of epoch %s: %w", len(rows), epoch, err)
	}
	for i, row := range stored {
		// Another writer's key for the epoch won the race: NewSealer reads and
		// unwraps it.
		if row.KeyID == rows[i].KeyID && !row.Destroyed() {
			k.cache.put(&cached{key: cacheKey{row.Log, epoch}, keyID: row.KeyID, secret: secrets[i]}, now)
		}
	}
	return nil
}

// SealerAt is NewSealer for the epoch of receive time at (see Options.Granularity).
func (k *Keyring) SealerAt(ctx context.Context, log catalog.LogID, at time.Time) (*Sealer, error) {
	return k.NewSealer(ctx, log, k.gran.Epoch(at))
}

// Seal encrypts plaintext with a fresh nonce; ad is authenticated, not encrypted.
func (s *Sealer) Seal(plaintext, ad []byte) ([]byte, error) {
	return s.SealPrefixed(nil, plaintext, ad)
}

// SealPrefixed is Seal of prefix followed by plaintext, without a buffer for the
// two together: they are copied where the ciphertext goes and encrypted in place.
func (s *Sealer) SealPrefixed(prefix, plaintext, ad []byte) ([]byte, error) {
	return s.SealPrefixedTo(make([]byte, 0, s.SealedLen(len(prefix)+len(plaintext))), prefix, plaintext, ad)
}

// SealedLen is the length of the ciphertext of n bytes of plaintext.
func (s *Sealer) SealedLen(n int) int {
	return len(s.hdr) + nonceSize + n + s.aead.Overhead()
}

// SealPrefixedTo is SealPrefixed appending the ciphertext to dst: with room for it
// (SealedLen) in dst, it is written there and nothing is allocated for it.
func (s *Sealer) SealPrefixedTo(dst, prefix, plaintext, ad []byte) ([]byte, error) {
	n := len(s.hdr) + nonceSize
	m := len(prefix) + len(plaintext)
	grown := slices.Grow(dst, s.SealedLen(m))
	out := grown[len(dst) : len(dst)+n+m]
	copy(out, s.hdr)
	nonce := out[len(s.hdr):n]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("keyring: nonce: %w", err)
	}
	s.used.Add(1)
	copy(out[n+copy(out[n:], prefix):], plaintext)
	aad := make([]byte, 0, n+len(ad))
	aad = append(append(aad, out[:n]...), ad...)
	sealed := s.aead.Seal(out[:n], nonce, out[n:], aad)
	return grown[:len(dst)+len(sealed)], nil
}

// Seal encrypts plaintext under the data key of the epoch of receive time at (see
// Options.Granularity): Encrypt with the epoch chosen for the caller.
func (k *Keyring) Seal(ctx context.Context, log catalog.LogID, at time.Time, plaintext, ad []byte) ([]byte, error) {
	return k.Encrypt(ctx, log, k.gran.Epoch(at), plaintext, ad)
}

// Open is Decrypt, named to pair with Seal.
func (k *Keyring) Open(ctx context.Context, log catalog.LogID, ciphertext, ad []byte) ([]byte, error) {
	return k.Decrypt(ctx, log, ciphertext, ad)
}

// Decrypt opens a ciphertext made by Encrypt for log with the same ad. It fails with
// ErrShredded once the epoch's key is destroyed, ErrDecrypt when the bytes or ad differ.
func (k *Keyring) Decrypt(ctx context.Context, log catalog.LogID, ciphertext, ad []byte) ([]byte, error) {
	h, err := parseHeader(ciphertext)
	if err != nil {
		return nil, err
	}
	dk, err := k.key(ctx, log, h.epoch, false)
	if err != nil {
		return nil, err
	}
	if dk.keyID != h.keyID {
		return nil, fmt.Errorf("%w: ciphertext names key %s, epoch %s of %s has key %s", ErrUnknownKey, h.keyID, h.epoch, log, dk.keyID)
	}
	aead, err := dk.openerOf(h.salt)
	if err != nil {
		return nil, err
	}
	hdr := ciphertext[:h.len]
	pt, err := aead.Open(nil, h.nonce, ciphertext[h.len:], append(hdr[:len(hdr):len(hdr)], ad...))
	if err != nil {
		return nil, fmt.Errorf("%w: %s epoch %s: %w", ErrDecrypt, log, h.epoch, err)
	}
	return pt, nil
}

// Destroy crypto-shreds the epoch of log: its data key is deleted from the catalog and
// from this keyring's cache. Other keyrings (other replicas) stop using it within their
// CacheTTL. Destroying an epoch without a key is not an error.
func (k *Keyring) Destroy(ctx context.Context, log catalog.LogID, epoch string) error {
	k.cache.remove(cacheKey{log, epoch})
	if _, err := k.store.DestroyDataKey(ctx, log, epoch, k.now()); err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return fmt.Errorf("keyring: destroy %s %s: %w", log, epoch, err)
	}
	k.cache.remove(cacheKey{log, epoch})
	return nil
}

// CiphertextEpoch returns the epoch a ciphertext was encrypted under.
func CiphertextEpoch(ciphertext []byte) (string, error) {
	h, err := parseHeader(ciphertext)
	return h.epoch, err
}

type header struct {
	epoch, keyID string
	salt, nonce  []byte
	len          int
}

func parseHeader(ct []byte) (header, error) {
	var h header
	if len(ct) < 2 || ct[0] != version {
		return h, fmt.Errorf("%w: not a version %d ciphertext", ErrDecrypt, version)
	}
	n := int(ct[1])
	h.len = 2 + n + keyIDSize + saltSize + nonceSize
	if n == 0 || n > maxEpoch || len(ct) < h.len+16 {
		return h, fmt.Errorf("%w: truncated ciphertext", ErrDecrypt)
	}
	p := ct[2:]
	h.epoch, p = string(p[:n]), p[n:]
	h.keyID, p = hex.EncodeToString(p[:keyIDSize]), p[keyIDSize:]
	h.salt, h.nonce = p[:saltSize], p[saltSize:saltSize+nonceSize]
	return h, nil
}

// openerOf returns the message cipher of salt under dk: the last one derived, if of
// the same salt (GCM's Open keeps no state, so one serves concurrent calls).
func (dk *cached) openerOf(salt []byte) (cipher.AEAD, error) {
	if o := dk.opener.Load(); o != nil && string(o.salt[:]) == string(salt) {
		return o.aead, nil
	}
	aead, err := messageAEAD(dk.secret, salt)
	if err != nil {
		return nil, err
	}
	o := &opener{aead: aead}
	copy(o.salt[:], salt)
	dk.opener.Store(o)
	return aead, nil
}

func messageAEAD(secret, salt []byte) (cipher.AEAD, error) {
	key, err := hkdf.Expand(sha256.New, secret, "sealtrail/payload/v1"+string(salt), 32)
	if err != nil {
		return nil, fmt.Errorf("keyring: derive message key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("keyring: message cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("keyring: message cipher: %w", err)
	}
	return aead, nil
}

// dataKeyPurpose starts the binding of every wrapped data key.
const dataKeyPurpose = "sealtrail/datakey/v1"

// wrapAD binds a wrapped data key to its row.
func wrapAD(log catalog.LogID, epoch, keyID string) []byte {
	return lengthPrefixed(dataKeyPurpose, log.ProjectID, string(log.Stream), epoch, keyID)
}

// key returns the unwrapped data key of (log, epoch), from the cache or the catalog,
// creating it when create is set and the epoch has none.
func (k *Keyring) key(ctx context.Context, log catalog.LogID, epoch string, create bool) (*cached, error) {
	ck := cacheKey{log, epoch}
	if c, ok := k.cache.get(ck, k.now()); ok {
		return c, nil
	}
	row, err := k.store.DataKey(ctx, log, epoch)
	if errors.Is(err, catalog.ErrNotFound) {
		if !create {
			return nil, fmt.Errorf("%w: %s epoch %s", ErrUnknownKey, log, epoch)
		}
		row, err = k.create(ctx, log, epoch)
	}
	if err != nil {
		return nil, fmt.Errorf("keyring: data key %s %s: %w", log, epoch, err)
	}
	if row.Destroyed() {
		return nil, fmt.Errorf("%w: %s epoch %s", ErrShredded, log, epoch)
	}
	secret, err := k.unwrap(ctx, row)
	if err != nil {
		return nil, err
	}
	c := &cached{key: ck, keyID: row.KeyID, secret: secret}
	k.cache.put(c, k.now())
	return c, nil
}

// unwrap opens a live row's data key with the KEK that wrapped it.
func (k *Keyring) unwrap(ctx context.Context, row catalog.DataKey) ([]byte, error) {
	w, ok := k.unwrappers[row.KEKID]
	if !ok {
		return nil, fmt.Errorf("%w: %s epoch %s was wrapped by %s, this keyring has %s", ErrWrongKEK, row.Log, row.Epoch, row.KEKID, k.kekIDs())
	}
	secret, err := w.Unwrap(ctx, row.Wrapped, wrapAD(row.Log, row.Epoch, row.KeyID))
	if err != nil {
		return nil, fmt.Errorf("keyring: data key %s %s: %w", row.Log, row.Epoch, err)
	}
	if len(secret) != dataKeyLen {
		return nil, fmt.Errorf("%w: data key %s %s has %d bytes", ErrUnwrap, row.Log, row.Epoch, len(secret))
	}
	return secret, nil
}

// create makes, wraps and stores a new data key; if another writer stored one first,
// the stored one is returned instead.
func (k *Keyring) create(ctx context.Context, log catalog.LogID, epoch string) (catalog.DataKey, error) {
	row, _, err := k.newKey(ctx, log, epoch)
	if err != nil {
		return row, err
	}
	return k.store.InsertDataKey(ctx, row)
}

// newKey makes a new data key for (log, epoch): its row to store, wrapped with the
// current KEK, and its secret.
func (k *Keyring) newKey(ctx context.Context, log catalog.LogID, epoch string) (catalog.DataKey, []byte, error) {
	secret := make([]byte, dataKeyLen)
	id := make([]byte, keyIDSize)
	if _, err := rand.Read(secret); err != nil {
		return catalog.DataKey{}, nil, fmt.Errorf("generate: %w", err)
	}
	if _, err := rand.Read(id); err != nil {
		return catalog.DataKey{}, nil, fmt.Errorf("generate: %w", err)
	}
	keyID := hex.EncodeToString(id)
	wrapped, err := k.kek.Wrap(ctx, secret, wrapAD(log, epoch, keyID))
	if err != nil {
		return catalog.DataKey{}, nil, fmt.Errorf("wrap: %w", err)
	}
	return catalog.DataKey{Log: log, Epoch: epoch, KeyID: keyID, KEKID: k.kek.ID(), Wrapped: wrapped, CreatedAt: k.now()}, secret, nil
}

// lengthPrefixed encodes fields unambiguously: each as a 4-byte big-endian length and
// its bytes.
func lengthPrefixed(fields ...string) []byte {
	var out []byte
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

// KEKSet is the keyring's key-encryption keys as one Wrapper, for the other secrets the
// service seals with its KEK (SIEM destinations' tokens): it wraps with the current KEK,
// and Unwrapper finds a previous one by the ID stored beside a wrapped secret, so a KEK
// rotation in progress does not strand them.
type KEKSet struct {
	Wrapper
	byID map[string]Wrapper
}

// KEKs returns the keyring's current KEK and the previous ones it unwraps with.
func (k *Keyring) KEKs() *KEKSet { return &KEKSet{Wrapper: k.kek, byID: k.unwrappers} }

// Unwrapper returns the KEK named id, current or previous.
func (s *KEKSet) Unwrapper(id string) (Wrapper, bool) {
	w, ok := s.byID[id]
	return w, ok
}
