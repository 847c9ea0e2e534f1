package control

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sealtrail/sealtrail/catalog"
)

// Scopes are the API key scopes of the spec.
var Scopes = []string{catalog.ScopeWrite, catalog.ScopeRead, catalog.ScopeExport, catalog.ScopeVerify}

// tokenPrefix starts every API key, so a leaked key is easy to recognise and scan for.
const tokenPrefix = "stk_"

// HashToken returns the stored hash of an API key token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateAPIKey creates an API key with scopes, expiring at expiresAt (zero: never). It
// returns the secret token, which is shown once and never stored, and the key.
func (s *Service) CreateAPIKey(ctx context.Context, actor Actor, projectID, name string, scopes []string, expiresAt time.Time) (string, catalog.APIKey, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return "", catalog.APIKey{}, err
	}
	if len(scopes) == 0 {
		return "", catalog.APIKey{}, invalid("an API key needs at least one scope (%s)", strings.Join(Scopes, ", "))
	}
	seen := map[string]bool{}
	for _, sc := range scopes {
		if !slices.Contains(Scopes, sc) {
			return "", catalog.APIKey{}, invalid("unknown scope %q (scopes are %s)", sc, strings.Join(Scopes, ", "))
		}
		if seen[sc] {
			return "", catalog.APIKey{}, invalid("scope %q given twice", sc)
		}
		seen[sc] = true
	}
	if err := checkText("key name", name); err != nil {
		return "", catalog.APIKey{}, err
	}
	if utf8.RuneCountInString(name) > 128 || !utf8.ValidString(name) {
		return "", catalog.APIKey{}, invalid("key name must be at most 128 characters")
	}
	if !expiresAt.IsZero() && !expiresAt.After(s.now()) {
		return "", catalog.APIKey{}, invalid("expiry %s is not in the future", expiresAt.UTC().Format(time.RFC3339))
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", catalog.APIKey{}, fmt.Errorf("API key: %w", err)
	}
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	id, err := newID("key_")
	if err != nil {
		return "", catalog.APIKey{}, err
	}
	k := catalog.APIKey{ID: id, ProjectID: projectID, Name: name, Hash: HashToken(token), Prefix: token[:12],
		Scopes: slices.Clone(scopes), CreatedAt: s.now(), ExpiresAt: expiresAt}
	meta := map[string]any{"scopes": scopes, "prefix": k.Prefix}
	if name != "" {
		meta["name"] = name
	}
	if !expiresAt.IsZero() {
		meta["expiresAt"] = catalog.MS(expiresAt).Format("2006-01-02T15:04:05.000Z")
	}
	rec := record{action: "api_key.created", target: Actor{Type: "api_key", ID: id}, metadata: meta}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		k, err = s.cat.CreateAPIKey(ctx, k)
		return mapCatalog(err, "API key "+id)
	})
	if err != nil {
		return "", catalog.APIKey{}, err
	}
	return token, k, nil
}

// RevokeAPIKey revokes a key; it is refused everywhere within a second (see
// Authenticate).
func (s *Service) RevokeAPIKey(ctx context.Context, actor Actor, projectID, keyID string) (catalog.APIKey, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.APIKey{}, err
	}
	keys, err := s.cat.ListAPIKeys(ctx, projectID)
	if err != nil {
		return catalog.APIKey{}, mapCatalog(err, "API keys")
	}
	i := slices.IndexFunc(keys, func(k catalog.APIKey) bool { return k.ID == keyID })
	if i < 0 {
		return catalog.APIKey{}, notFound("API key %s in project %s", keyID, projectID)
	}
	if st := keys[i].State(s.now()); st == catalog.KeyRevoked {
		return catalog.APIKey{}, stateErr("API key %s is already revoked", keyID)
	}
	var k catalog.APIKey
	rec := record{action: "api_key.revoked", target: Actor{Type: "api_key", ID: keyID}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		k, err = s.cat.RevokeAPIKey(ctx, projectID, keyID, s.now())
		return mapCatalog(err, "API key "+keyID)
	})
	if err == nil {
		s.auth.forget(string(k.Hash))
	}
	return k, err
}

// ListAPIKeys lists the project's keys (hashes and prefixes only).
func (s *Service) ListAPIKeys(ctx context.Context, projectID string) ([]catalog.APIKey, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return nil, err
	}
	ks, err := s.cat.ListAPIKeys(ctx, projectID)
	return ks, mapCatalog(err, "API keys")
}

// ErrBadKey means a token is unknown, revoked or expired.
var ErrBadKey = errors.New("invalid API key")

// Authenticate returns the active key of token. A cached key is used while the
// catalog's control-plane generation, read at most once a second, stands still
// (cache.go), so a revocation made by any replica is honoured everywhere within a
// second; expiry is checked on every call.
func (s *Service) Authenticate(ctx context.Context, token string) (catalog.APIKey, error) {
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 256 {
		return catalog.APIKey{}, ErrBadKey
	}
	hash := HashToken(token)
	k, err := cached(ctx, s, s.auth, string(hash), func() (catalog.APIKey, error) {
		k, err := s.cat.APIKeyByHash(ctx, hash)
		if errors.Is(err, catalog.ErrNotFound) {
			return k, ErrBadKey
		}
		if err != nil {
			return k, fmt.Errorf("look up API key: %w", err)
		}
		return k, nil
	})
	if err != nil {
		return catalog.APIKey{}, err
	}
	now := s.now()
	if k.State(now) != catalog.KeyActive {
		return catalog.APIKey{}, ErrBadKey
	}
	return k, nil
}
