package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/anchor/rekor"
	"github.com/sealtrail/sealtrail/anchor/tsa"
	"github.com/sealtrail/sealtrail/tlog"
)

const anchorUsage = "--anchor <file.json> [--service-key hex] [--witness-key vkey]... [--rekor-key file] [--tsa-cert file]"

// maxAnchorFile bounds the anchor file: an /anchors page of 100 heads with their proofs.
const maxAnchorFile = 16 << 20

// anchorTrust is what the auditor trusts to check the outside attestations.
type anchorTrust struct {
	witnessKeys []string
	rekor       *rekor.Trust // from --rekor-key, with the --service-key when given
	tsa         *tsa.Trust   // from --tsa-cert
}

// externalVerifier checks one outside party's proof of the tree_heads checkpoint and
// returns the time it attests. checked is false when the auditor gave no trust for
// that party (the link is then reported, not checked).
type externalVerifier func(t *anchorTrust, signedCheckpoint []byte, proof json.RawMessage) (at time.Time, checked bool, err error)

// externalVerifiers dispatches by anchorType. A nil verifier is refused as not
// supported (exit 2), never passed.
var externalVerifiers = map[string]externalVerifier{
	"witness":        verifyWitnessAnchor,
	rekor.AnchorType: verifyRekorAnchor,
	tsa.AnchorType:   verifyTSAAnchor,
}

// verifyRekorAnchor checks a Rekor v2 entry of the checkpoint (anchor/rekor.Verify).
// A proof that does not verify is a broken link (tlog.ErrAnchor: exit 1).
func verifyRekorAnchor(t *anchorTrust, cp []byte, proof json.RawMessage) (time.Time, bool, error) {
	if t.rekor == nil {
		return time.Time{}, false, nil
	}
	at, err := rekor.Verify(cp, proof, *t.rekor)
	return at, true, asBrokenLink(err, rekor.ErrVerify)
}

// verifyTSAAnchor checks an RFC 3161 token of the checkpoint (anchor/tsa.Verify).
func verifyTSAAnchor(t *anchorTrust, cp []byte, proof json.RawMessage) (time.Time, bool, error) {
	if t.tsa == nil {
		return time.Time{}, false, nil
	}
	at, err := tsa.Verify(cp, proof, *t.tsa)
	return at, true, asBrokenLink(err, tsa.ErrVerify)
}

// asBrokenLink marks err as tlog.ErrAnchor when it is the verifier's rejection verr.
func asBrokenLink(err, verr error) error {
	if errors.Is(err, verr) {
		return fmt.Errorf("%w: %w", tlog.ErrAnchor, err)
	}
	return err
}

// loadAnchorTrust reads the --rekor-key and --tsa-cert files; a file that cannot be
// read or parsed is a usage error (exit 2).
func loadAnchorTrust(t *anchorTrust, rekorKey, tsaCert string, serviceKey ed25519.PublicKey) error {
	if rekorKey != "" {
		tr, err := rekor.LoadTrust(rekorKey)
		if err != nil {
			return fmt.Errorf("--rekor-key: %w", err)
		}
		tr.ServiceKey = serviceKey
		t.rekor = &tr
	}
	if tsaCert != "" {
		tr, err := tsa.LoadTrust(tsaCert)
		if err != nil {
			return fmt.Errorf("--tsa-cert: %w", err)
		}
		t.tsa = &tr
	}
	return nil
}

func verifyWitnessAnchor(t *anchorTrust, cp []byte, proof json.RawMessage) (time.Time, bool, error) {
	if len(t.witnessKeys) == 0 {
		return time.Time{}, false, nil
	}
	at, err := tlog.VerifyWitness(cp, proof, t.witnessKeys)
	return at, true, err
}

type stringsFlag []string

func (f *stringsFlag) String() string     { return strings.Join(*f, ",") }
func (f *stringsFlag) Set(s string) error { *f = append(*f, s); return nil }

// attestedHead is one head of an /anchors response.
type attestedHead struct {
	TreeSize    uint64            `json:"treeSize"`
	RootHash    string            `json:"rootHash"`
	Timestamp   string            `json:"timestamp"`
	Signature   string            `json:"signature"`
	AnchorType  *string           `json:"anchorType"`
	AnchorRef   *string           `json:"anchorRef"`
	AnchorProof *tlog.AnchorProof `json:"anchorProof"`
	AnchoredAt  *string           `json:"anchoredAt"`
	Stream      string            `json:"stream"` // only in a single-head file
}

func runVerifyAnchor(e *env, args []string) error {
	fs := newFlagSet("verify anchor")
	path := fs.String("anchor", "", "`file` holding a GET /anchors response, or one attested head with its stream")
	var key keyFlag
	fs.Var(&key, "service-key", "trusted service Ed25519 public `key` (hex): checks the stream head and the tree_heads checkpoint signatures")
	var witnesses stringsFlag
	fs.Var(&witnesses, "witness-key", "a trusted witness's signed-note verifier `key`; may be repeated")
	rekorKey := fs.String("rekor-key", "", "PEM public key `file` of the Rekor log")
	tsaCert := fs.String("tsa-cert", "", "PEM certificate chain `file` of the timestamp authority")
	if err := parseFlags(e, fs, anchorUsage, args); err != nil {
		return err
	}
	if err := required(fs, "anchor"); err != nil {
		return err
	}
	trust := &anchorTrust{witnessKeys: witnesses}
	if err := loadAnchorTrust(trust, *rekorKey, *tsaCert, key.key); err != nil {
		return err
	}
	for _, k := range witnesses {
		if _, err := tlog.NewCosignatureVerifier(k); err != nil {
			return fmt.Errorf("--witness-key: %w", err)
		}
	}
	data, err := readSmallFile(*path, maxAnchorFile)
	if err != nil {
		return fmt.Errorf("--anchor: %w", err)
	}
	heads, err := parseAnchorFile(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	checked := 0
	for _, h := range heads {
		if h.AnchorProof == nil {
			fmt.Fprintf(e.stdout, "%s size %d: not anchored yet\n", h.Stream, h.TreeSize)
			continue
		}
		if err := verifyAttestedHead(e, trust, key, h); err != nil {
			return err
		}
		checked++
	}
	if checked == 0 {
		return errors.New("no anchored head in the file")
	}
	fmt.Fprintf(e.stdout, "OK: %d anchored head(s) verified\n", checked)
	return nil
}

// parseAnchorFile reads an /anchors response {stream, heads} or one head with stream.
func parseAnchorFile(data []byte) ([]attestedHead, error) {
	if _, err := tlog.Canonicalize(data); err != nil {
		return nil, fmt.Errorf("not JSON that RFC 8785 can represent: %w", err)
	}
	var page struct {
		Stream string         `json:"stream"`
		Heads  []attestedHead `json:"heads"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, fmt.Errorf("not an /anchors response or attested head: %w", err)
	}
	if page.Heads == nil {
		var h attestedHead
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, fmt.Errorf("not an attested head: %w", err)
		}
		page.Heads = []attestedHead{h}
	}
	for i := range page.Heads {
		if page.Heads[i].Stream == "" {
			page.Heads[i].Stream = page.Stream
		}
		if !tlog.ValidStream(page.Heads[i].Stream) {
			return nil, fmt.Errorf("head %d: stream %q must be events or project_audit", i, page.Heads[i].Stream)
		}
	}
	return page.Heads, nil
}

// verifyAttestedHead checks every link of one anchored head: the stream head (and its
// signature with --service-key), its leaf's inclusion in the tree_heads checkpoint
// (and the checkpoint's signature), and each outside attestation of that checkpoint.
func verifyAttestedHead(e *env, trust *anchorTrust, key keyFlag, h attestedHead) error {
	p := h.AnchorProof
	sth := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: p.ProjectID, Stream: h.Stream, TreeSize: h.TreeSize,
		RootHash: h.RootHash, Timestamp: h.Timestamp, Signature: h.Signature}
	name := fmt.Sprintf("%s/%s size %d", p.ProjectID, h.Stream, h.TreeSize)
	cp, err := tlog.CheckTreeHeadInclusion(&sth, p, key.key)
	if err != nil {
		return &tamperError{msg: name, err: err}
	}
	fmt.Fprintf(e.stdout, "%s: leaf %d of %s size %d", name, p.LeafIndex, cp.Origin, cp.Size)
	if key.key == nil {
		fmt.Fprint(e.stdout, " (service signatures not checked: no --service-key)")
	}
	fmt.Fprintln(e.stdout)
	if len(p.External) == 0 {
		return &tamperError{msg: name + ": the anchor proof holds no outside attestation"}
	}
	if h.AnchorType == nil || h.AnchorRef == nil || *h.AnchorType != p.External[0].AnchorType || *h.AnchorRef != p.External[0].AnchorRef {
		return &tamperError{msg: name + ": anchorType and anchorRef do not name the proof's first attestation"}
	}
	verified := 0
	var skipped []string
	for _, x := range p.External {
		v, known := externalVerifiers[x.AnchorType]
		if !known {
			return &tamperError{msg: fmt.Sprintf("%s: unknown anchorType %q", name, x.AnchorType)}
		}
		if v == nil {
			return fmt.Errorf("%s: anchorType %s is not supported in this build", name, x.AnchorType)
		}
		at, checked, err := v(trust, []byte(p.Checkpoint), x.Proof)
		if errors.Is(err, tlog.ErrAnchor) {
			return &tamperError{msg: fmt.Sprintf("%s: %s %s", name, x.AnchorType, x.AnchorRef), err: err}
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, x.AnchorType, err)
		}
		if !checked {
			skipped = append(skipped, x.AnchorType)
			continue
		}
		verified++
		fmt.Fprintf(e.stdout, "  %s %s: verified", x.AnchorType, x.AnchorRef)
		if !at.IsZero() {
			fmt.Fprintf(e.stdout, ", attests %s", tlog.FormatTime(at))
		}
		fmt.Fprintln(e.stdout)
	}
	if verified == 0 {
		return fmt.Errorf("%s: no trust given for its attestations (%s): pass --witness-key, --rekor-key or --tsa-cert",
			name, strings.Join(skipped, ", "))
	}
	for _, s := range skipped {
		fmt.Fprintf(e.stdout, "  %s: not checked (no trust given)\n", s)
	}
	return nil
}
