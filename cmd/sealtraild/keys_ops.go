package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/servicekey"
	"github.com/sealtrail/sealtrail/tlog"
)

const rotateKeyUsage = "usage: sealtraild rotate-key [--config file.json] [--data dir] [--new-key file]"

// rotateKey is `sealtraild rotate-key`: with the service stopped, it hands the service
// key over to a new one (read from --new-key, else generated), appends the signed
// transition to the key history and installs the new key in signingKeyFile
// (docs/key-rotation.md).
func rotateKey(args []string, stdout, _ io.Writer) error {
	var newKeyPath string
	cfg, err := offlineConfig("rotate-key", rotateKeyUsage, args, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&newKeyPath, "new-key", "", "file holding the new key (hex seed); default: generate one")
	})
	if err != nil || cfg == nil {
		return err
	}
	oldKey, err := readKey("service key", cfg.SigningKeyFile)
	if err != nil {
		return usageError{err}
	}
	var newKey ed25519.PrivateKey
	if newKeyPath != "" {
		if newKey, err = readKey("--new-key", newKeyPath); err != nil {
			return usageError{err}
		}
	} else if _, newKey, err = tlog.GenerateKey(); err != nil {
		return err
	}
	if newKey.Equal(oldKey) {
		return usageError{errors.New("rotate-key: the new key is the current service key")}
	}
	// The history must end at the current key before anything is written.
	if _, err := servicekey.Load(cfg.Ops.KeyHistoryFile, oldKey.Public().(ed25519.PublicKey)); err != nil {
		return usageError{err}
	}
	// Keep the new key on disk before the history names it, so that no failure can
	// leave a history whose last key is lost.
	next := cfg.SigningKeyFile + ".next"
	if err := servicekey.WriteKeyFile(next, newKey); err != nil {
		return fmt.Errorf("rotate-key: %w", err)
	}
	h, err := servicekey.Rotate(cfg.Ops.KeyHistoryFile, oldKey, newKey, time.Now())
	if err != nil {
		return err
	}
	if err := os.Rename(next, cfg.SigningKeyFile); err != nil {
		return fmt.Errorf("rotate-key: the history names the new key, which is in %s; install it as %s: %w", next, cfg.SigningKeyFile, err)
	}
	t := h.Transitions[len(h.Transitions)-1]
	fmt.Fprintf(stdout, "rotated the service key (transition %d at %s)\nold public key: %s\nnew public key: %s\nkey history:    %s\nStart the service (every replica) with the new key; publish the new public key to verifiers.\n",
		t.Seq, t.Timestamp, t.PreviousKey, t.NewKey, cfg.Ops.KeyHistoryFile)
	return nil
}

// readKey reads a private service key (hex seed) from a private file.
func readKey(what, path string) (ed25519.PrivateKey, error) {
	data, err := private.ReadSecret(what, path, maxSecretFile)
	if err != nil {
		return nil, err
	}
	k, err := tlog.ParsePrivateKey(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return k, nil
}
