package sqlite

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

// A seal hands the terms of the events it committed (actor and target ids, actions,
// statuses) to the indexer (sealed), which keeps them per project-stream until it has
// indexed them. A chunk whose terms are all still in memory is grouped in Go and its
// postings inserted as rows: reading the chunk's events back from the catalog and
// grouping them in SQL was most of the indexer's cost. A chunk that is not all in
// memory (events committed before this handle opened, or dropped to stay within
// keptMax) is read from the catalog as before. Both ways write the same rows;
// TestRecentPostingsMatchCatalog checks it.

// keptMax bounds the events whose terms the indexer keeps, over all project-streams.
// A stream is indexed only once a whole chunk of it waits (termIndex.minChunk), so a
// quiet stream's terms would wait in memory for as long as it takes to gather one, a
// thousand tenants' worth of them: past the bound the indexer drops every other
// stream's kept terms (their chunks are read from the catalog when they come), and a
// busy stream, whose chunk fills within seconds, starts keeping again at once.
const keptMax = 4 * termChunk

// termKinds lists the kinds of terms, in the order of their numbers (termActor, ...).
var termKinds = [...]int{termActor, termTarget, termAction, termStatus}

// termSet holds the terms of one event, or of a run of events, by kind: element k-1
// is of kind k.
type termSet[T any] [len(termKinds)]T

// eventTerms returns the terms of e.
func eventTerms(e *catalog.Event) termSet[string] {
	return termSet[string]{e.ActorID, e.TargetID, e.Action, e.Status}
}

// recent are the terms of the committed events first, first+1, ... of one
// project-stream.
type recent struct {
	first uint64
	terms termSet[[]string]
}

func (r *recent) end() uint64 { return r.first + uint64(len(r.terms[0])) } // the sequence after the last

// keep appends the ids of events (committed, in sequence order) to the ids kept for
// log number n, within keptMax over all logs. Called with ti.mu held.
func (ti *termIndex) keep(n int64, events []catalog.Event) {
	if len(events) == 0 {
		return
	}
	r := ti.recent[n]
	if r != nil && r.end() != events[0].Sequence {
		ti.drop(n) // a gap: start over
		r = nil
	}
	if ti.keptTotal+len(events) > keptMax {
		for m := range ti.recent {
			if m != n {
				ti.drop(m)
			}
		}
		if ti.keptTotal+len(events) > keptMax { // this stream alone: start over
			ti.drop(n)
			r = nil
		}
		if len(events) > keptMax {
			return
		}
	}
	if r == nil {
		if events[0].Sequence <= ti.indexed[n] {
			return
		}
		r = &recent{first: events[0].Sequence}
		ti.recent[n] = r
	}
	for i := range events {
		for k, t := range eventTerms(&events[i]) {
			r.terms[k] = append(r.terms[k], t)
		}
	}
	ti.keptTotal += len(events)
}

// drop forgets every kept term of log number n. Called with ti.mu held.
func (ti *termIndex) drop(n int64) {
	if r := ti.recent[n]; r != nil {
		ti.keptTotal -= len(r.terms[0])
		delete(ti.recent, n)
	}
}

// kept returns the terms of log number n's events from..to (inclusive) if they are
// all kept. The slices are read-only views: keep only appends, forget makes new ones.
func (ti *termIndex) kept(n int64, from, to uint64) (out termSet[[]string], ok bool) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	r := ti.recent[n]
	if r == nil || from < r.first || to >= r.end() || from > to {
		return out, false
	}
	lo, hi := from-r.first, to-r.first+1
	for k, ts := range r.terms {
		out[k] = ts[lo:hi:hi]
	}
	return out, true
}

// forget drops the kept ids of log number n's events up to sequence to, once indexed.
// Called with ti.mu held.
func (ti *termIndex) forget(n int64, to uint64) {
	r := ti.recent[n]
	if r == nil || to < r.first {
		return
	}
	if to+1 >= r.end() {
		ti.drop(n)
		return
	}
	i := to + 1 - r.first
	ti.keptTotal -= int(i)
	for k, ts := range r.terms {
		r.terms[k] = slices.Clone(ts[i:])
	}
	r.first = to + 1
}

// posting is one term_postings row in the making.
type posting struct {
	value string
	last  uint64
	seqs  []byte
}

// group returns the postings of ids, the terms of one kind of the events first,
// first+1, ... : one per distinct non-empty term, its sequences ascending, in order of
// term (the order of the primary key, so that inserting them walks the B-tree once
// rather than jumping about it).
func group(first uint64, ids []string) []posting {
	at := make(map[string]int)
	var out []posting
	for i, id := range ids {
		if id == "" {
			continue
		}
		seq := first + uint64(i)
		j, ok := at[id]
		if !ok {
			j = len(out)
			at[id] = j
			out = append(out, posting{value: id})
		} else {
			out[j].seqs = append(out[j].seqs, ',')
		}
		out[j].seqs = strconv.AppendUint(out[j].seqs, seq, 10)
		out[j].last = seq
	}
	slices.SortFunc(out, func(a, b posting) int { return strings.Compare(a.value, b.value) })
	return out
}

// keptPostings returns the postings of log number n's events from..to from the kept
// terms, in the segment that starts after from-1, and false if they are not all kept.
func (ti *termIndex) keptPostings(n int64, from, to uint64) ([]logPosting, bool) {
	kept, ok := ti.kept(n, from, to)
	if !ok {
		return nil, false
	}
	var out []logPosting
	for k, ids := range kept {
		for _, p := range group(from, ids) {
			out = append(out, logPosting{n: n, seg: from - 1, kind: termKinds[k], posting: p})
		}
	}
	return out, true
}
