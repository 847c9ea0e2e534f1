package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/internal/loadtest"
)

// The read-side cases of `sealtrail-load run -proofs N` (issue 21: inclusion proofs
// ≥ 20,000/s at 10^6 leaves): sealtraild on the embedded default is filled with N
// events through /log/batch (not measured), then GET /proof/inclusion is measured by
// eventId (the catalog lookup of the event, then the proof from the tiles) and by
// leafIndex, against the trivial handler answering the same GETs.

// proofFillSize is the size of the events that fill the log: proofs do not read
// payloads, so small events fill a large tree quickly.
const proofFillSize = 200

// proofSample is how many event ids, spread over the log, the eventId case cycles
// through.
const proofSample = 4096

func proofCases(ctx context.Context, o options, t *table, self, work string) error {
	leafIndex := func(i int) string { return fmt.Sprintf("?leafIndex=%d", uint64(i)*7919%uint64(o.proofs)) }
	tp, err := start(self, []string{"trivial"}, nil, work, addrFromListening)
	if err != nil {
		return fmt.Errorf("trivial handler: %w", err)
	}
	defer tp.stop()

	data, err := os.MkdirTemp(work, "data-")
	if err != nil {
		return err
	}
	p, err := startSealtrail(o, work, data, nil)
	if err != nil {
		return err
	}
	defer p.stop()
	base := "http://" + p.addr
	var proj struct{ ID string }
	if err := admin(base, p.token, "/admin/v1/projects", map[string]string{"name": "load-proofs"}, &proj); err != nil {
		return err
	}
	var key struct{ Secret string }
	if err := admin(base, p.token, "/admin/v1/projects/"+proj.ID+"/keys",
		map[string]any{"scopes": []string{"log:write", "log:verify"}}, &key); err != nil {
		return err
	}
	start := time.Now()
	ids, err := fillLog(ctx, base, key.Secret, o.proofs, o.batch)
	if err != nil {
		return fmt.Errorf("fill %d events: %w", o.proofs, err)
	}
	fmt.Fprintf(os.Stderr, "  filled %d events of %d bytes in %s\n", o.proofs, proofFillSize, time.Since(start).Round(time.Second))
	name := fmt.Sprintf("inclusion proof, %d leaves", o.proofs)
	proofURL := base + "/api/v1/proof/inclusion"
	// Both servers stay up, and every round measures the trivial handler next to the
	// proofs (in reverse order every other round), so that each round's ratio
	// compares the same minutes of this machine, as the ingest cases' do.
	cases := []func(round int){
		func(round int) {
			t.run(ctx, o, round, "trivial handler", fmt.Sprintf("GET, c=%d", o.proofConc), tp, "",
				loadtest.Load{URL: "http://" + tp.addr + "/proof", Get: leafIndex, C: o.proofConc, Count: 1 << 30})
		},
		func(round int) {
			t.run(ctx, o, round, "Sealtrail embedded", fmt.Sprintf("%s, by eventId, c=%d", name, o.proofConc), p, "",
				loadtest.Load{URL: proofURL, Tokens: []string{key.Secret}, C: o.proofConc, Count: 1 << 30,
					Get: func(i int) string { return "?eventId=" + url.QueryEscape(ids[i*7%len(ids)]) }})
		},
		func(round int) {
			t.run(ctx, o, round, "Sealtrail embedded", fmt.Sprintf("%s, by leafIndex, c=%d", name, o.proofConc), p, "",
				loadtest.Load{URL: proofURL, Tokens: []string{key.Secret}, C: o.proofConc, Count: 1 << 30, Get: leafIndex})
		},
	}
	for round := 1; round <= o.rounds; round++ {
		order := slices.Clone(cases)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, c := range order {
			c(round)
		}
	}
	return nil
}

// fillLog seals n events through POST /log/batch (four batches in flight) and returns
// up to proofSample of their ids, spread over the log.
func fillLog(ctx context.Context, base, key string, n, batch int) ([]string, error) {
	batches := (n + batch - 1) / batch
	every := max(1, n/proofSample)
	var next atomic.Int64
	var mu sync.Mutex
	var ids []string
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				k := min(batch, n-b*batch)
				got, err := postBatch(ctx, base, key, loadtest.Batch(b, k, proofFillSize), k)
				if err != nil {
					errs <- err
					next.Store(int64(batches))
					return
				}
				mu.Lock()
				for j, id := range got {
					if (b*batch+j)%every == 0 {
						ids = append(ids, id)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no events sealed")
	}
	return ids, nil
}

// postBatch posts one /log/batch body of k events and returns their ids.
func postBatch(ctx context.Context, base, key string, body []byte, k int) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/log/batch", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var res struct {
		Sealed  int
		Results []struct{ ID, Status, Error string }
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &res) != nil || res.Sealed != k {
		return nil, fmt.Errorf("POST /log/batch: %s: %.200s", resp.Status, raw)
	}
	ids := make([]string, len(res.Results))
	for i, r := range res.Results {
		ids[i] = r.ID
	}
	return ids, nil
}
