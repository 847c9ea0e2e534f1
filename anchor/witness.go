package anchor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/sealtrail/sealtrail/tlog"
)

// ProveFunc returns the RFC 6962 consistency proof between two sizes of the
// tree_heads log (Job.ConsistencyProof).
type ProveFunc func(ctx context.Context, oldSize, newSize uint64) ([]tlog.Hash, error)

// Witness is a Publisher that asks a C2SP tlog-witness for a cosignature of the
// checkpoint (POST <url>/add-checkpoint with a consistency proof from the size the
// witness last cosigned). Its proof is a tlog.WitnessProof, checked offline by
// tlog.VerifyWitness; its time is the cosignature's. The witness must know the
// tree_heads log (its origin and the service's verifier key, Job.VerifierKey).
//
// It is safe for concurrent use.
type Witness struct {
	url      string
	vkey     string
	verifier note.Verifier
	prove    ProveFunc
	client   *http.Client

	mu   sync.Mutex
	size uint64 // the size the witness last cosigned, as far as we know
}

var _ Publisher = (*Witness)(nil)

// maxWitnessResponse bounds a witness's answer: a few signature lines.
const maxWitnessResponse = 64 << 10

// NewWitness returns a Witness publisher for the witness at url (its add-checkpoint
// endpoint is url + "/add-checkpoint") whose key is vkey (a signed-note verifier key,
// Ed25519 or cosignature/v1). client may be nil (a client with a 30 s timeout).
func NewWitness(url, vkey string, prove ProveFunc, client *http.Client) (*Witness, error) {
	v, err := tlog.NewCosignatureVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("anchor: witness %s: %w", url, err)
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("anchor: witness URL %q must be http(s)", url)
	}
	if prove == nil {
		return nil, errors.New("anchor: witness needs a ProveFunc")
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &Witness{url: strings.TrimSuffix(url, "/"), vkey: vkey, verifier: v, prove: prove, client: client}, nil
}

// Type is "witness".
func (w *Witness) Type() string { return "witness" }

// Publish asks the witness to cosign signedCheckpoint. When the witness answers 409
// with the size it holds, it retries once from that size; a witness ahead of the
// checkpoint is an error (it saw a larger tree_heads log: a fork or a rollback).
func (w *Witness) Publish(ctx context.Context, signedCheckpoint []byte) (string, json.RawMessage, time.Time, error) {
	body, _, ok := bytes.Cut(signedCheckpoint, []byte("\n\n"))
	if !ok {
		return "", nil, time.Time{}, errors.New("anchor: witness: checkpoint is not a signed note")
	}
	cp, err := tlog.ParseCheckpoint(append(body, '\n'))
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("anchor: witness: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for attempt := 0; ; attempt++ {
		old := w.size
		if old > cp.Size {
			old = 0 // our memory is stale or the witness rolled back: ask, it answers 409
		}
		sigs, witnessSize, err := w.add(ctx, old, cp.Size, signedCheckpoint)
		if errors.Is(err, errConflict) && attempt == 0 {
			if witnessSize > cp.Size {
				return "", nil, time.Time{}, fmt.Errorf("anchor: witness %s holds tree_heads size %d, beyond %d", w.url, witnessSize, cp.Size)
			}
			w.size = witnessSize
			continue
		}
		if err != nil {
			return "", nil, time.Time{}, err
		}
		proof, err := json.Marshal(tlog.WitnessProof{Cosignatures: sigs})
		if err != nil {
			return "", nil, time.Time{}, err
		}
		at, err := tlog.VerifyWitness(signedCheckpoint, proof, []string{w.vkey})
		if err != nil {
			return "", nil, time.Time{}, fmt.Errorf("anchor: witness %s: its answer: %w", w.url, err)
		}
		w.size = cp.Size
		return w.verifier.Name() + "@" + strconv.FormatUint(cp.Size, 10), proof, at, nil
	}
}

var errConflict = errors.New("witness holds another size")

// add sends one add-checkpoint request and returns the cosignature lines, or
// errConflict with the witness's size.
func (w *Witness) add(ctx context.Context, old, size uint64, signed []byte) ([]string, uint64, error) {
	var req bytes.Buffer
	fmt.Fprintf(&req, "old %d\n", old)
	proof, err := w.prove(ctx, old, size)
	if err != nil {
		return nil, 0, fmt.Errorf("anchor: witness: consistency proof %d to %d: %w", old, size, err)
	}
	for _, h := range proof {
		req.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	req.WriteString("\n")
	req.Write(signed)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/add-checkpoint", &req)
	if err != nil {
		return nil, 0, fmt.Errorf("anchor: witness: %w", err)
	}
	resp, err := w.client.Do(hr)
	if err != nil {
		return nil, 0, fmt.Errorf("anchor: witness %s: %w", w.url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessResponse))
	if err != nil {
		return nil, 0, fmt.Errorf("anchor: witness %s: read answer: %w", w.url, err)
	}
	switch {
	case resp.StatusCode == http.StatusConflict && resp.Header.Get("Content-Type") == "text/x.tlog.size":
		n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("anchor: witness %s: 409 with size %q", w.url, data)
		}
		return nil, n, errConflict
	case resp.StatusCode != http.StatusOK:
		return nil, 0, fmt.Errorf("anchor: witness %s: add-checkpoint from %d to %d: %s %s", w.url, old, size, resp.Status,
			strings.TrimSpace(string(data)))
	}
	var sigs []string
	for line := range strings.SplitSeq(strings.TrimRight(string(data), "\n"), "\n") {
		if line != "" {
			sigs = append(sigs, line)
		}
	}
	return sigs, 0, nil
}
