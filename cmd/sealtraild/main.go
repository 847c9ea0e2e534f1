// Command sealtraild is the Sealtrail service and its operator commands:
//
//	sealtraild serve [--config file.json] [--listen addr] [--data dir] [--dev]
//	sealtraild admin <command> ...   (a client of the operator API; see admin --help)
//	sealtraild fsck [--config file.json] [--data dir] [--sweep]
//	sealtraild rotate-key [--config file.json] [--data dir] [--new-key file]
//
// Configuration is one JSON schema (Config), overridable by SEALTRAIL_* environment
// variables; see docs/operations.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// usageError marks errors that exit with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

const usage = `usage: sealtraild <command> [flags]

commands:
  serve   run the service (serve --help for flags)
  admin   operator commands against a running service (admin --help)
  fsck    check a deployment's catalog and object store (fsck --help)
  rotate-key  hand the service key over to a new one, announced in the key history
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdout, stderr)
	case "admin":
		err = admin(args[1:], stdout, stderr)
	case "rotate-key":
		err = rotateKey(args[1:], stdout, stderr)
	case "fsck":
		err = fsckCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usageError{fmt.Errorf("unknown command %q", args[0])}
	}
	var ue usageError
	var ae apiError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sealtraild: %v\n", err)
		return 2
	case errors.As(err, &ae):
		fmt.Fprintf(stderr, "sealtraild: %v\n", err)
		return 1
	default:
		fmt.Fprintf(stderr, "sealtraild: %v\n", err)
		return 1
	}
}
