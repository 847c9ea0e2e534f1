package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/sealtrail/sealtrail/tlog"
)

const sthUsage = "--sth <file.json> --service-key <hex> [--key-history <file.json>]"

// maxSTHFile bounds the tree-head file; a real one is a few hundred bytes.
const maxSTHFile = 1 << 20

// sthMembers are the members of an STH object; rootMembers those of a /root response.
var (
	sthMembers  = []string{"v", "projectId", "stream", "treeSize", "rootHash", "timestamp", "signature"}
	rootMembers = []string{"sth", "servicePublicKey"}
)

func runVerifySTH(e *env, args []string) error {
	fs := newFlagSet("verify sth")
	path := fs.String("sth", "", "`file` holding an STH object, or a /root response {sth, servicePublicKey}")
	var key keyFlag
	fs.Var(&key, "service-key", "trusted service Ed25519 public `key` (hex)")
	historyPath := fs.String("key-history", "", "the service's signed key history (`file`, GET /api/v1/key-history): accept a head signed by an older or newer key that it announces")
	if err := parseFlags(e, fs, sthUsage, args); err != nil {
		return err
	}
	if err := required(fs, "sth", "service-key"); err != nil {
		return err
	}
	var history *tlog.KeyHistory
	if *historyPath != "" {
		raw, err := readSmallFile(*historyPath, maxKeyHistoryFile)
		if err != nil {
			return fmt.Errorf("--key-history: %w", err)
		}
		if history, err = tlog.ParseKeyHistory(raw); err != nil {
			return fmt.Errorf("--key-history %s: %w", *historyPath, err)
		}
	}
	data, err := readSmallFile(*path, maxSTHFile)
	if err != nil {
		return fmt.Errorf("--sth: %w", err)
	}
	sth, fileKey, err := parseSTHFile(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	fmt.Fprintf(e.stdout, "project:      %s\n", sth.ProjectID)
	fmt.Fprintf(e.stdout, "stream:       %s\n", sth.Stream)
	fmt.Fprintf(e.stdout, "tree size:    %d\n", sth.TreeSize)
	fmt.Fprintf(e.stdout, "root:         %s\n", sth.RootHash)
	fmt.Fprintf(e.stdout, "timestamp:    %s\n", sth.Timestamp)
	want := hex.EncodeToString(key.key)
	if history != nil && len(history.Transitions) > 0 {
		return verifySTHWithHistory(e, key.key, history, &sth, fileKey)
	}
	if fileKey != "" && fileKey != want {
		// The client rules treat a changed service key as tampering (service_key_changed);
		// the verifier holds the same line rather than trust the file's own claim.
		te := &tamperError{msg: fmt.Sprintf("service_key_changed: the file names service key %s, not the trusted --service-key %s", fileKey, want)}
		fmt.Fprintf(e.stdout, "TAMPERED: %s\n", te.Error())
		return te
	}
	if err := tlog.VerifySTH(key.key, &sth); err != nil {
		if errors.Is(err, tlog.ErrBadSignature) {
			te := &tamperError{msg: "bad_sth_signature: the tree head does not verify under the service key", err: err}
			fmt.Fprintf(e.stdout, "TAMPERED: %s\n", oneLine(te.Error()))
			return te
		}
		return fmt.Errorf("%s: malformed tree head: %w", *path, err)
	}
	fmt.Fprintf(e.stdout, "OK: tree head signed by service key %s\n", want)
	return nil
}

// maxKeyHistoryFile bounds the key history file.
const maxKeyHistoryFile = 4 << 20

// verifySTHWithHistory checks sth under the key of its time in the history that the
// trusted key belongs to (docs/key-rotation.md). A head signed by a key the history
// does not hold, or by a key outside its period, is service_key_changed; one that
// verifies under no key is bad_sth_signature.
func verifySTHWithHistory(e *env, trusted []byte, h *tlog.KeyHistory, sth *tlog.STH, fileKey string) error {
	signer, err := tlog.VerifySTHWithHistory(trusted, h, sth)
	reason := ""
	switch {
	case errors.Is(err, tlog.ErrKeyNotAnnounced):
		reason = "service_key_changed"
	case errors.Is(err, tlog.ErrBadSignature):
		reason = "bad_sth_signature"
	case err != nil:
		return fmt.Errorf("malformed tree head: %w", err)
	case fileKey != "" && fileKey != signer:
		err, reason = fmt.Errorf("the file names service key %s, but %s signed", fileKey, signer), "service_key_changed"
	}
	if reason != "" {
		te := &tamperError{msg: reason, err: err}
		fmt.Fprintf(e.stdout, "TAMPERED: %s\n", oneLine(te.Error()))
		return te
	}
	fmt.Fprintf(e.stdout, "OK: tree head signed by service key %s, which the key history announces (trusted key %s)\n", signer, hex.EncodeToString(trusted))
	return nil
}

// parseSTHFile accepts an STH object or a /root response {sth, servicePublicKey}. The
// JSON must be representable by RFC 8785 (no duplicate keys) and carry exactly the
// known members, so what is printed is what the signature covers. fileKey is the
// response's servicePublicKey, or "" for a bare STH.
func parseSTHFile(data []byte) (sth tlog.STH, fileKey string, err error) {
	canon, err := tlog.Canonicalize(data)
	if err != nil {
		return tlog.STH{}, "", fmt.Errorf("not a JSON tree head: %w", err)
	}
	obj, err := exactMembers(canon, nil)
	if err != nil {
		return tlog.STH{}, "", err
	}
	raw := canon
	if _, ok := obj["sth"]; ok {
		if _, err := exactMembers(canon, rootMembers); err != nil {
			return tlog.STH{}, "", fmt.Errorf("/root response: %w", err)
		}
		if err := json.Unmarshal(obj["servicePublicKey"], &fileKey); err != nil {
			return tlog.STH{}, "", errors.New("/root response: servicePublicKey is not a string")
		}
		if _, err := tlog.ParsePublicKey(fileKey); err != nil {
			return tlog.STH{}, "", fmt.Errorf("/root response: servicePublicKey: %w", err)
		}
		raw = obj["sth"]
	}
	if _, err := exactMembers(raw, sthMembers); err != nil {
		return tlog.STH{}, "", fmt.Errorf("tree head: %w", err)
	}
	if err := json.Unmarshal(raw, &sth); err != nil {
		return tlog.STH{}, "", fmt.Errorf("tree head: %w", err)
	}
	return sth, fileKey, nil
}

// exactMembers decodes a JSON object and, when want is not nil, checks that its members
// are exactly want.
func exactMembers(raw []byte, want []string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if want == nil {
		return obj, nil
	}
	var names []string
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(want, k) {
			return nil, fmt.Errorf("unknown member %q", k)
		}
	}
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			return nil, fmt.Errorf("missing member %q", k)
		}
	}
	return obj, nil
}

// readSmallFile reads a file of at most limit bytes. Failures are input errors.
func readSmallFile(path string, limit int64) ([]byte, error) {
	if path == "" {
		return nil, errors.New("empty file name")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}
