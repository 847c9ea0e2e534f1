package main

import (
	"fmt"

	"github.com/sealtrail/sealtrail/tlog"
)

const (
	inclusionUsage   = "--leaf-hash <hex> --index <n> --size <n> --root <hex> --proof <hex,...>"
	consistencyUsage = "--old-size <n> --old-root <hex> --new-size <n> --new-root <hex> [--proof <hex,...>]"
)

func runVerifyInclusion(e *env, args []string) error {
	fs := newFlagSet("verify inclusion")
	var leaf, root hashFlag
	var index, size uintFlag
	var proof proofFlag
	fs.Var(&leaf, "leaf-hash", "RFC 6962 leaf `hash` (hex) of the event, its leafHash")
	fs.Var(&index, "index", "0-based leaf `index` (sequence - 1)")
	fs.Var(&size, "size", "`size` of the tree the proof is for")
	fs.Var(&root, "root", "trusted root `hash` (hex) of that tree")
	fs.Var(&proof, "proof", "audit path: comma-separated `hashes` (hex), empty for a tree of one leaf")
	if err := parseFlags(e, fs, inclusionUsage, args); err != nil {
		return err
	}
	if err := required(fs, "leaf-hash", "index", "size", "root", "proof"); err != nil {
		return err
	}
	if size.n == 0 {
		return fmt.Errorf("--size must be at least 1: an empty tree includes nothing")
	}
	if index.n >= size.n {
		return fmt.Errorf("--index %d is not below --size %d (the index is 0-based)", index.n, size.n)
	}
	fmt.Fprintf(e.stdout, "leaf hash:    %s\n", tlog.Hex(leaf.h))
	fmt.Fprintf(e.stdout, "index:        %d (sequence %d)\n", index.n, index.n+1)
	fmt.Fprintf(e.stdout, "tree size:    %d\n", size.n)
	fmt.Fprintf(e.stdout, "root:         %s\n", tlog.Hex(root.h))
	fmt.Fprintf(e.stdout, "proof:        %d hashes\n", len(proof.hs))
	if err := tlog.VerifyInclusion(leaf.h, index.n, size.n, proof.hs, root.h); err != nil {
		te := &tamperError{msg: "inclusion proof", err: err}
		fmt.Fprintf(e.stdout, "TAMPERED: %s\n", oneLine(te.Error()))
		return te
	}
	fmt.Fprintf(e.stdout, "OK: leaf %d is included in the tree of size %d\n", index.n, size.n)
	return nil
}

func runVerifyConsistency(e *env, args []string) error {
	fs := newFlagSet("verify consistency")
	var oldRoot, newRoot hashFlag
	var oldSize, newSize uintFlag
	var proof proofFlag
	fs.Var(&oldSize, "old-size", "`size` of the older (pinned) tree")
	fs.Var(&oldRoot, "old-root", "root `hash` (hex) of the older tree")
	fs.Var(&newSize, "new-size", "`size` of the newer tree")
	fs.Var(&newRoot, "new-root", "root `hash` (hex) of the newer tree")
	fs.Var(&proof, "proof", "consistency proof: comma-separated `hashes` (hex); empty or absent when the sizes are equal or the old size is 0")
	if err := parseFlags(e, fs, consistencyUsage, args); err != nil {
		return err
	}
	if err := required(fs, "old-size", "old-root", "new-size", "new-root"); err != nil {
		return err
	}
	if oldSize.n > newSize.n {
		return fmt.Errorf("--old-size %d is larger than --new-size %d", oldSize.n, newSize.n)
	}
	fmt.Fprintf(e.stdout, "old tree:     size %d, root %s\n", oldSize.n, tlog.Hex(oldRoot.h))
	fmt.Fprintf(e.stdout, "new tree:     size %d, root %s\n", newSize.n, tlog.Hex(newRoot.h))
	fmt.Fprintf(e.stdout, "proof:        %d hashes\n", len(proof.hs))
	err := tlog.VerifyConsistency(oldSize.n, newSize.n, oldRoot.h, newRoot.h, proof.hs)
	if err == nil && oldSize.n == 0 && oldRoot.h != tlog.EmptyRoot {
		// RFC 6962 proves nothing about an empty tree, so its root is checked here: there
		// is exactly one.
		err = fmt.Errorf("the tree of size 0 has root %s", tlog.Hex(tlog.EmptyRoot))
	}
	if err != nil {
		te := &tamperError{msg: "consistency proof", err: err}
		fmt.Fprintf(e.stdout, "TAMPERED: %s\n", oneLine(te.Error()))
		return te
	}
	fmt.Fprintf(e.stdout, "OK: the tree of size %d extends the tree of size %d\n", newSize.n, oldSize.n)
	return nil
}
