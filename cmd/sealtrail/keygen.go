package main

import (
	"fmt"

	"github.com/sealtrail/sealtrail/tlog"
)

// runKeygen prints a new Ed25519 key pair made from this machine's randomness; nothing
// leaves the machine.
func runKeygen(e *env, args []string) error {
	fs := newFlagSet("keygen")
	if err := parseFlags(e, fs, "(no flags)", args); err != nil {
		return err
	}
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "# Ed25519 key pair generated locally; the private key is the 32-byte seed.")
	fmt.Fprintln(e.stdout, "# Keep it secret. Register the public key as the project's customer signing key.")
	fmt.Fprintf(e.stdout, "private key: %x\n", priv.Seed())
	fmt.Fprintf(e.stdout, "public key:  %x\n", []byte(pub))
	return nil
}
