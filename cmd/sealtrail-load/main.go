// Command sealtrail-load is the load test behind `make loadtest`: it starts the built
// sealtraild (embedded default and PostgreSQL), Tessera's POSIX storage and a trivial
// handler on 127.0.0.1, drives each with the same closed-loop generator
// (internal/loadtest), and prints one table row per case. Every process it starts is
// stopped by its PID. It is not part of the service or the offline verifier.
//
//	sealtrail-load run [flags]   the whole comparison (see -h)
//	sealtrail-load tessera DIR   a Tessera POSIX log answering POST /add (used by run)
//	sealtrail-load trivial       the trivial-handler ceiling (used by run)
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sealtrail-load run [flags] | tessera DIR | trivial")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runAll(os.Args[2:])
	case "tessera":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: sealtrail-load tessera DIR")
			os.Exit(2)
		}
		err = runTessera(os.Args[2])
	case "trivial":
		err = runTrivial()
	default:
		fmt.Fprintf(os.Stderr, "sealtrail-load: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sealtrail-load:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// A usageError is a malformed flag or argument: exit status 2, as for an unknown
// command.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
