// Package pkcs11 is a keyring.Wrapper whose key-encryption key is an AES-256 key held
// in a PKCS#11 token (an HSM; SoftHSM2 in tests). Data keys are wrapped by AES-GCM
// computed inside the token (CKM_AES_GCM) with each wrapped key's binding (project,
// stream, epoch, key id) as the GCM additional data; the KEK is created sensitive and
// not extractable, so it never leaves the token. It needs cgo (the module is loaded
// with dlopen). A PKCS#11 login holds for the whole process and token: while one KEK
// is logged in, another on the same token is not asked for its PIN again. See
// docs/keyring.md.
//
// Wrapped format: 0x01 | 12-byte IV | AES-256-GCM ciphertext and 16-byte tag.
package pkcs11

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	p11 "github.com/miekg/pkcs11"

	"github.com/sealtrail/sealtrail/keyring"
)

// Config names the module, the token, how to log in, and the key.
type Config struct {
	// Module is the path of the token's PKCS#11 library.
	Module string
	// TokenLabel selects the token (the slot whose token has this label).
	TokenLabel string
	// PIN is the user PIN.
	PIN string
	// KeyLabel is the CKA_LABEL of the AES key.
	KeyLabel string
}

func (c Config) check() error {
	if c.Module == "" || c.TokenLabel == "" || c.KeyLabel == "" {
		return errors.New("pkcs11: module, token label and key label are required")
	}
	return nil
}

// KEK wraps data keys with one AES key in a token. Its methods may be called
// concurrently; they share one session, opened again if the token drops it.
type KEK struct {
	cfg  Config
	ctx  *p11.Ctx
	slot uint

	mu      sync.Mutex // guards the session: a PKCS#11 session runs one operation at a time
	session p11.SessionHandle
	key     p11.ObjectHandle
	open    bool
}

var _ keyring.Wrapper = (*KEK)(nil)

const (
	version = 1
	ivSize  = 12
	tagBits = 128
)

// New loads the module, finds the token, logs in and finds the key, which must exist
// (CreateKey makes one).
func New(cfg Config) (*KEK, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ctx, slot, err := load(cfg)
	if err != nil {
		return nil, err
	}
	k := &KEK{cfg: cfg, ctx: ctx, slot: slot}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.connectLocked(); err != nil {
		k.closeLocked()
		return nil, err
	}
	return k, nil
}

// modules are the loaded PKCS#11 modules by path. C_Initialize and C_Finalize act on
// the whole process, so every KEK on one module shares one handle, finalized when the
// last one closes.
var modules = struct {
	sync.Mutex
	m map[string]*module
}{m: map[string]*module{}}

type module struct {
	ctx  *p11.Ctx
	refs int
}

func acquire(path string) (*p11.Ctx, error) {
	modules.Lock()
	defer modules.Unlock()
	if m, ok := modules.m[path]; ok {
		m.refs++
		return m.ctx, nil
	}
	ctx := p11.New(path)
	if ctx == nil {
		return nil, fmt.Errorf("pkcs11: cannot load module %s", path)
	}
	if err := ctx.Initialize(); err != nil && !errors.Is(err, p11.Error(p11.CKR_CRYPTOKI_ALREADY_INITIALIZED)) {
		ctx.Destroy()
		return nil, fmt.Errorf("pkcs11: initialize %s: %w", path, err)
	}
	modules.m[path] = &module{ctx: ctx, refs: 1}
	return ctx, nil
}

func release(path string) {
	modules.Lock()
	defer modules.Unlock()
	m, ok := modules.m[path]
	if !ok {
		return
	}
	if m.refs--; m.refs == 0 {
		m.ctx.Finalize()
		m.ctx.Destroy()
		delete(modules.m, path)
	}
}

// load acquires the module and finds the slot of the token labelled cfg.TokenLabel.
func load(cfg Config) (*p11.Ctx, uint, error) {
	ctx, err := acquire(cfg.Module)
	if err != nil {
		return nil, 0, err
	}
	slots, err := ctx.GetSlotList(true)
	if err != nil {
		release(cfg.Module)
		return nil, 0, fmt.Errorf("pkcs11: slots: %w", err)
	}
	for _, s := range slots {
		ti, err := ctx.GetTokenInfo(s)
		if err == nil && ti.Label == cfg.TokenLabel {
			return ctx, s, nil
		}
	}
	release(cfg.Module)
	return nil, 0, fmt.Errorf("pkcs11: no token labelled %q in %s", cfg.TokenLabel, cfg.Module)
}

// connectLocked opens a session, logs in and finds the key.
func (k *KEK) connectLocked() error {
	s, err := k.ctx.OpenSession(k.slot, p11.CKF_SERIAL_SESSION|p11.CKF_RW_SESSION)
	if err != nil {
		return fmt.Errorf("pkcs11: open session: %w", err)
	}
	if err := k.ctx.Login(s, p11.CKU_USER, k.cfg.PIN); err != nil && !errors.Is(err, p11.Error(p11.CKR_USER_ALREADY_LOGGED_IN)) {
		k.ctx.CloseSession(s)
		return fmt.Errorf("pkcs11: login to %q: %w", k.cfg.TokenLabel, err)
	}
	key, err := findKey(k.ctx, s, k.cfg.KeyLabel)
	if err != nil {
		k.ctx.CloseSession(s)
		return err
	}
	k.session, k.key, k.open = s, key, true
	return nil
}

func findKey(ctx *p11.Ctx, s p11.SessionHandle, label string) (p11.ObjectHandle, error) {
	tmpl := []*p11.Attribute{
		p11.NewAttribute(p11.CKA_CLASS, p11.CKO_SECRET_KEY),
		p11.NewAttribute(p11.CKA_KEY_TYPE, p11.CKK_AES),
		p11.NewAttribute(p11.CKA_LABEL, label),
	}
	if err := ctx.FindObjectsInit(s, tmpl); err != nil {
		return 0, fmt.Errorf("pkcs11: find key %q: %w", label, err)
	}
	objs, _, err := ctx.FindObjects(s, 2)
	if ferr := ctx.FindObjectsFinal(s); err == nil {
		err = ferr
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("pkcs11: find key %q: %w", label, err)
	case len(objs) == 0:
		return 0, fmt.Errorf("pkcs11: no AES key labelled %q", label)
	case len(objs) > 1:
		return 0, fmt.Errorf("pkcs11: more than one AES key labelled %q", label)
	}
	return objs[0], nil
}

// CreateKey generates the AES-256 key cfg names in the token: a token object that is
// sensitive, not extractable, and usable only to encrypt and decrypt. A key with that
// label already there is an error.
func CreateKey(cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	k, err := New(cfg)
	if err == nil {
		k.Close()
		return fmt.Errorf("pkcs11: a key labelled %q exists", cfg.KeyLabel)
	}
	ctx, slot, err := load(cfg)
	if err != nil {
		return err
	}
	defer release(cfg.Module)
	s, err := ctx.OpenSession(slot, p11.CKF_SERIAL_SESSION|p11.CKF_RW_SESSION)
	if err != nil {
		return fmt.Errorf("pkcs11: open session: %w", err)
	}
	defer ctx.CloseSession(s)
	if err := ctx.Login(s, p11.CKU_USER, cfg.PIN); err != nil && !errors.Is(err, p11.Error(p11.CKR_USER_ALREADY_LOGGED_IN)) {
		return fmt.Errorf("pkcs11: login to %q: %w", cfg.TokenLabel, err)
	}
	_, err = ctx.GenerateKey(s, []*p11.Mechanism{p11.NewMechanism(p11.CKM_AES_KEY_GEN, nil)}, []*p11.Attribute{
		p11.NewAttribute(p11.CKA_CLASS, p11.CKO_SECRET_KEY),
		p11.NewAttribute(p11.CKA_KEY_TYPE, p11.CKK_AES),
		p11.NewAttribute(p11.CKA_VALUE_LEN, 32),
		p11.NewAttribute(p11.CKA_LABEL, cfg.KeyLabel),
		p11.NewAttribute(p11.CKA_TOKEN, true),
		p11.NewAttribute(p11.CKA_PRIVATE, true),
		p11.NewAttribute(p11.CKA_SENSITIVE, true),
		p11.NewAttribute(p11.CKA_EXTRACTABLE, false),
		p11.NewAttribute(p11.CKA_ENCRYPT, true),
		p11.NewAttribute(p11.CKA_DECRYPT, true),
		p11.NewAttribute(p11.CKA_WRAP, false),
		p11.NewAttribute(p11.CKA_UNWRAP, false),
	})
	if err != nil {
		return fmt.Errorf("pkcs11: generate key %q: %w", cfg.KeyLabel, err)
	}
	return nil
}

// Close closes the session and releases the module (unloaded with the last KEK on
// it; closing the last session of a token logs out).
func (k *KEK) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closeLocked()
}

func (k *KEK) closeLocked() {
	if k.open {
		k.ctx.CloseSession(k.session)
		k.open = false
	}
	if k.ctx != nil {
		release(k.cfg.Module)
		k.ctx = nil
	}
}

// ID returns "pkcs11:<token label>/<key label>".
func (k *KEK) ID() string { return "pkcs11:" + k.cfg.TokenLabel + "/" + k.cfg.KeyLabel }

// lost reports whether err means the session is gone (the token was reset or
// unplugged, or closed every session): the next call opens a new one.
func lost(err error) bool {
	var e p11.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e {
	case p11.CKR_SESSION_HANDLE_INVALID, p11.CKR_SESSION_CLOSED, p11.CKR_DEVICE_REMOVED, p11.CKR_DEVICE_ERROR,
		p11.CKR_TOKEN_NOT_PRESENT, p11.CKR_USER_NOT_LOGGED_IN, p11.CKR_OBJECT_HANDLE_INVALID, p11.CKR_KEY_HANDLE_INVALID:
		return true
	}
	return false
}

// do runs op on the session, (re)connecting first if needed, and once more on a fresh
// session if the token had dropped the old one.
func (k *KEK) do(op func() error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx == nil {
		return errors.New("pkcs11: KEK is closed")
	}
	for attempt := 0; ; attempt++ {
		if !k.open {
			if err := k.connectLocked(); err != nil {
				return err
			}
		}
		err := op()
		if err == nil || !lost(err) || attempt == 1 {
			return err
		}
		k.ctx.CloseSession(k.session)
		k.open = false
	}
}

// Wrap seals plaintext with AES-GCM in the token, ad as additional data, under a
// fresh random IV (or the one the token chose, if it overrides it).
func (k *KEK) Wrap(ctx context.Context, plaintext, ad []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := k.do(func() error {
		iv := make([]byte, ivSize)
		if _, err := rand.Read(iv); err != nil {
			return err
		}
		params := p11.NewGCMParams(iv, ad, tagBits)
		defer params.Free()
		if err := k.ctx.EncryptInit(k.session, []*p11.Mechanism{p11.NewMechanism(p11.CKM_AES_GCM, params)}, k.key); err != nil {
			return err
		}
		ct, err := k.ctx.Encrypt(k.session, plaintext)
		if err != nil {
			return err
		}
		if used := params.IV(); len(used) == ivSize {
			iv = used
		}
		out = append(append([]byte{version}, iv...), ct...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pkcs11: wrap with %s: %w", k.ID(), err)
	}
	return out, nil
}

// Unwrap opens a key Wrap returned with the same ad. Damage, other ad or another key
// fail with keyring.ErrUnwrap; a token that cannot be reached with its own error.
func (k *KEK) Unwrap(ctx context.Context, wrapped, ad []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(wrapped) < 1+ivSize+tagBits/8 || wrapped[0] != version {
		return nil, fmt.Errorf("%w: pkcs11 %s: malformed wrapped key", keyring.ErrUnwrap, k.ID())
	}
	var (
		pt      []byte
		decrypt bool // the failure came from the decryption, not the token
	)
	err := k.do(func() error {
		decrypt = false
		params := p11.NewGCMParams(wrapped[1:1+ivSize], ad, tagBits)
		defer params.Free()
		if err := k.ctx.DecryptInit(k.session, []*p11.Mechanism{p11.NewMechanism(p11.CKM_AES_GCM, params)}, k.key); err != nil {
			return err
		}
		var err error
		pt, err = k.ctx.Decrypt(k.session, wrapped[1+ivSize:])
		decrypt = err != nil && !lost(err)
		return err
	})
	if err != nil && decrypt {
		return nil, fmt.Errorf("%w: pkcs11 %s: %w", keyring.ErrUnwrap, k.ID(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("pkcs11: unwrap with %s: %w", k.ID(), err)
	}
	return pt, nil
}
