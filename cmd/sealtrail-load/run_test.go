package main

import (
	"errors"
	"testing"
)

// TestRunFlags checks that every malformed flag of `sealtrail-load run` is a
// usageError (exit status 2) before anything starts.
func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-rounds", "0"},
		{"-rounds", "21"},
		{"-batch-c", "0"},
		{"-batch-c", "257"},
		{"-c", "200,x"},
		{"-c", "0"},
		{"-only", "("},
		{"-pg", "postgres://db.example:5432/x"},
		{"-duration", "soon"},
	} {
		err := runAll(args)
		if !errors.As(err, new(usageError)) {
			t.Errorf("run %q: %v, want a usage error", args, err)
		}
	}
}
