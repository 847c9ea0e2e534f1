// Command sealtrail is Sealtrail's offline verifier: what an auditor runs, with no
// network and no trust in the service, to check an export, a proof or a signed tree head.
// It imports nothing but the primitives package tlog and the standard library, so all of
// it can be read in one sitting.
//
//	sealtrail keygen
//	sealtrail verify full --export F [--root H] [--size N] [--signing-key K]...
//	sealtrail verify inclusion --leaf-hash H --index N --size N --root H --proof h1,h2,...
//	sealtrail verify consistency --old-size N --old-root H --new-size N --new-root H [--proof ...]
//	sealtrail verify sth --sth F --service-key K [--key-history H]
//	sealtrail verify digest --file F --service-key K
//	sealtrail verify anchor --anchor F [--service-key K] [--witness-key V]... [--rekor-key F] [--tsa-cert F]
//	sealtrail selfcheck
//
// Exit status: 0 verified, 1 tamper detected (the message says where and why), 2 usage
// or input error (one line on stderr). docs/verifier.md describes the output format.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sealtrail/sealtrail/tlog"
)

// Exit codes, fixed by the spec ("Offline verifier").
const (
	exitOK     = 0 // verified
	exitTamper = 1 // tamper detected
	exitUsage  = 2 // usage or input error
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// env is what a command may touch: its streams, and whether stderr is a terminal (which
// turns on progress output).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stderrIsTTY    bool
}

// command is one leaf of the command tree. run returns nil when everything verified, a
// *tamperError (or a *tlog.ChainBreak) when tampering was detected, and any other error
// for a usage or input problem.
type command struct {
	name    string // as typed: "verify full"
	summary string
	usage   string // flag synopsis
	run     func(e *env, args []string) error
}

var commands = []*command{
	{"keygen", "print a new Ed25519 key pair generated locally", "", runKeygen},
	{"verify full", "rebuild a stream's tree from its JSON export", fullUsage, runVerifyFull},
	{"verify inclusion", "check an RFC 6962 inclusion proof", inclusionUsage, runVerifyInclusion},
	{"verify consistency", "check an RFC 6962 consistency proof", consistencyUsage, runVerifyConsistency},
	{"verify sth", "check a signed tree head under the service key", sthUsage, runVerifySTH},
	{"verify digest", "check an email digest's signed facts and its text", digestUsage, runVerifyDigest},
	{"verify anchor", "check an attested head from the stream head to its outside attestation", anchorUsage, runVerifyAnchor},
	{"selfcheck", "build, export, verify and tamper a small log in memory", "", runSelfcheck},
	{"help", "show this help", "", nil},
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, stderrIsTTY: isTerminal(stderr)}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "sealtrail: no command given; run 'sealtrail help' for the list")
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		printHelp(stdout)
		return exitOK
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		name := args[0]
		if name == "verify" && len(args) > 1 {
			name += " " + args[1]
		}
		hint := "run 'sealtrail help' for the list"
		if args[0] == "verify" {
			hint = "verify takes full, inclusion, consistency, sth, digest or anchor"
		}
		fmt.Fprintf(stderr, "sealtrail: unknown command %q; %s\n", name, hint)
		return exitUsage
	}
	err := cmd.run(e, rest)
	if errors.Is(err, errHelpShown) {
		return exitOK
	}
	code := exitCode(err)
	var fe *failedError
	switch {
	case code == exitTamper && !errors.As(err, &fe):
		fmt.Fprintf(stderr, "sealtrail: %s: tamper detected: %s\n", cmd.name, oneLine(err.Error()))
	case code != exitOK:
		fmt.Fprintf(stderr, "sealtrail: %s: %s\n", cmd.name, oneLine(err.Error()))
	}
	return code
}

// lookup finds the command named by the first one or two words of args.
func lookup(args []string) (*command, []string) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if c.run == nil || len(args) < len(words) {
			continue
		}
		match := true
		for i, w := range words {
			if args[i] != w {
				match = false
				break
			}
		}
		if match {
			return c, args[len(words):]
		}
	}
	return nil, nil
}

// tamperError is a verification failure: the input is well-formed and says something
// the cryptography refutes.
type tamperError struct {
	msg string
	err error // optional cause
}

func (e *tamperError) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *tamperError) Unwrap() error { return e.err }

// failedError is a failed selfcheck: the verifier itself is not to be trusted. Like a
// tamper it exits 1.
type failedError struct{ msg string }

func (e *failedError) Error() string { return e.msg }

// exitCode maps a command's result to the process exit status.
func exitCode(err error) int {
	var te *tamperError
	var cb *tlog.ChainBreak
	var fe *failedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &te), errors.As(err, &cb), errors.As(err, &fe):
		return exitTamper
	default:
		return exitUsage
	}
}

// oneLine keeps an error message on one line of stderr whatever the input put in it.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `sealtrail: Sealtrail's offline verifier. It needs no network and trusts no service.

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-20s %s\n", c.name, c.summary)
		if c.usage != "" {
			fmt.Fprintf(w, "  %-20s   %s\n", "", c.usage)
		}
	}
	fmt.Fprint(w, `
Hashes, keys and signatures are lowercase hex. Flags take one or two dashes.
'sealtrail <command> --help' shows a command's flags.

Exit status: 0 verified; 1 tamper detected (the message names where and why);
2 usage or input error (one line on stderr).
`)
}

// isTerminal reports whether w is a character device, the standard library's nearest
// test for a terminal. /dev/null also passes, which only costs unseen progress output.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
