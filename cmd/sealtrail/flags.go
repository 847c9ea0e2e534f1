package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sealtrail/sealtrail/tlog"
)

// errHelpShown ends a command that printed its --help; the exit status is 0.
var errHelpShown = errors.New("help shown")

// newFlagSet returns a flag set that reports errors to its caller instead of printing
// them, so every usage error comes out as one line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs. --help prints the command's usage on stdout and
// returns errHelpShown; positional arguments are a usage error.
func parseFlags(e *env, fs *flag.FlagSet, usage string, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(e.stdout, "usage: sealtrail %s %s\n\nflags:\n", fs.Name(), usage)
		fs.SetOutput(e.stdout)
		fs.PrintDefaults()
		return errHelpShown
	}
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags take the form --name value)", fs.Arg(0))
	}
	return nil
}

// hashFlag is a flag holding one lowercase-hex SHA-256 hash.
type hashFlag struct {
	h   tlog.Hash
	set bool
}

func (f *hashFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return tlog.Hex(f.h)
}

func (f *hashFlag) Set(s string) error {
	h, err := tlog.ParseHash(s)
	if err != nil {
		return err
	}
	f.h, f.set = h, true
	return nil
}

// uintFlag is a flag holding a non-negative decimal integer.
type uintFlag struct {
	n   uint64
	set bool
}

func (f *uintFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatUint(f.n, 10)
}

func (f *uintFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return errors.New("not a non-negative decimal integer")
	}
	f.n, f.set = n, true
	return nil
}

// proofFlag is a flag holding a comma-separated list of hashes; an empty value is the
// empty proof.
type proofFlag struct {
	hs  []tlog.Hash
	set bool
}

func (f *proofFlag) String() string {
	if f == nil {
		return ""
	}
	parts := make([]string, len(f.hs))
	for i, h := range f.hs {
		parts[i] = tlog.Hex(h)
	}
	return strings.Join(parts, ",")
}

func (f *proofFlag) Set(s string) error {
	if f.set {
		return errors.New("given more than once")
	}
	f.set = true
	if s == "" {
		return nil
	}
	for i, part := range strings.Split(s, ",") {
		h, err := tlog.ParseHash(part)
		if err != nil {
			return fmt.Errorf("proof element %d: %w", i+1, err)
		}
		f.hs = append(f.hs, h)
	}
	return nil
}

// keysFlag is a flag holding Ed25519 public keys; it may be repeated, and each value may
// list several keys separated by commas.
type keysFlag struct {
	keys []ed25519.PublicKey
}

func (f *keysFlag) String() string {
	if f == nil {
		return ""
	}
	parts := make([]string, len(f.keys))
	for i, k := range f.keys {
		parts[i] = fmt.Sprintf("%x", []byte(k))
	}
	return strings.Join(parts, ",")
}

func (f *keysFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		k, err := tlog.ParsePublicKey(part)
		if err != nil {
			return err
		}
		f.keys = append(f.keys, k)
	}
	return nil
}

// keyFlag is a flag holding one Ed25519 public key.
type keyFlag struct {
	key ed25519.PublicKey
}

func (f *keyFlag) String() string {
	if f == nil || f.key == nil {
		return ""
	}
	return fmt.Sprintf("%x", []byte(f.key))
}

func (f *keyFlag) Set(s string) error {
	k, err := tlog.ParsePublicKey(s)
	if err != nil {
		return err
	}
	f.key = k
	return nil
}

// required returns a usage error naming the first of names that was not given.
func required(fs *flag.FlagSet, names ...string) error {
	seen := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { seen[f.Name] = true })
	for _, n := range names {
		if !seen[n] {
			return fmt.Errorf("--%s is required", n)
		}
	}
	return nil
}
