// Package sequencer turns submitted events into sealed leaves of their project-stream's
// tile log: durably, in order, before they are acknowledged.
//
// One logSequencer runs per active project-stream (created on first use, dropped when
// idle). Submissions join the pending pool; the stream's seal loop swaps the pool out
// (under load a pool that has just begun lingers up to 2 ms, so a batch is not cut at
// the first of the producers the last acknowledgement released) and hands it to the
// process's group commit (committer): each tick takes the batch of every stream that
// handed one in since the last tick and commits them all in one catalog transaction
// (Catalog.SealGroup, each stream under its own lock, its checkpoint row) with one
// group payload holding all their payload bundles (one append to the filesystem
// store's segment file, or one object elsewhere; one durability wait), and
// acknowledges their events at that commit. While a tick commits, the next one
// gathers, so ticks grow with load by themselves. A stream whose lock another replica
// holds is skipped and tries again in a later tick.
//
// Each stream's publish loop then materializes what was committed, coalesced: at most
// one publication per Config.PublishInterval, each up to the latest committed size.
// A publication is due when the interval has passed since the stream's last one and
// something was committed since; the due streams join the process's next publication
// round (publisher, pubround.go), one round at a time and rounds at least
// PublishInterval/2 apart, at most Config.MaxPublishing streams in it: one catalog
// PublishGroup (the publish locks of all of them, their published sizes in one
// write) around one tiles.PublishGroup (every stream's tiles, entry bundles and then
// notes in one store write: three filesystem syncs on the filesystem store, however
// many streams). A stream due while a round runs joins the
// next, coalescing more batches meanwhile. The round's goroutine exists only while
// streams are queued, so idle streams cost nothing.
//
// The publication budget (Config.PublishBudget, pubbudget.go) bounds the mirror work
// per second independently of the number of tenants: a round takes a quiet stream
// (less than a tile, 256 leaves, to publish) only with a token of a process-wide
// token bucket filled at PublishBudget per second, oldest request first; the others
// stay queued and coalesce. With n quiet streams due, each publishes about every
// max(PublishInterval, n/PublishBudget), and the process makes at most about
// PublishBudget such publications a second, each of which creates a few files (a
// partial hash tile, a partial entry bundle, on the filesystem store the note's new
// file unless its spare can be reused). A stream with a tile or more to publish is
// not held back (its publication writes full tiles anyway, shared by hundreds of
// events), a lone stream keeps its PublishInterval, and Close publishes everything
// without waiting. Only the checkpoint note and the tiles lag: proofs, signed heads,
// /verify and the tile endpoints are served from committed state (step 5), exact at
// once.
//
// The commit order, and what a crash at each step leaves behind:
//
//  1. Take the locks of the tick's project-streams (catalog.SealGroup: those no other
//     replica holds, in a fixed order) and read their checkpoints. The PostgreSQL
//     driver starts instead from the checkpoints its last seals committed and takes
//     the locks with step 4's checkpoint UPDATE, conditional on those sizes; if one
//     moved, it rolls back and runs 2-4 again under the locks (docs/catalog.md).
//     Crash: nothing written; the locks die with the transaction or process.
//  2. Create the data keys the tick's streams lack for this epoch, all in one catalog
//     write (keyring.PrepareAt; if it fails, each build creates its own). Then for
//     each stream, on at most GOMAXPROCS builders: assign sequences cp.Size+1.., mint
//     ids (ascending within the batch) and nonces, build leaves, encrypt payloads
//     (straight into the encoded payload bundle, version 2: each leaf in its compact
//     form, tiles.PayloadLayout, docs/storage.md) and append the leaf hashes to the
//     compact range read from the checkpoint. A stream whose build fails is left out
//     of the tick (its events fail); the others go on. Crash: nothing of the batches
//     written; at most new streams' empty checkpoint rows and data keys, which the
//     next seal uses.
//  3. Write the tick's group payload: every stream's payload bundle end to end, each
//     batch row naming its segment (object, offset, length), while the catalog
//     inserts the index rows; the catalog waits for the write to be durable before it
//     commits, and rolls back if it failed. On the filesystem store
//     (tiles.PayloadAppender) the payload is appended to the store's open segment
//     file, payload/<hour>/<ms>-<fileId>, with one write and one fdatasync; a new
//     file is started after a restart, after a failed append and at 64 MiB or
//     tiles.MaxSegmentAge. Other stores get an object of its own per tick,
//     payload/<hour>/<ms>-<tickId> (tickId random, tiles.GroupPayloadKey).
//     Crash: bytes no batch row names, past the file's last committed segment or in
//     an orphan object. No place is ever named twice (an append goes past every
//     earlier one; a tick's object has a random name), so the next tick never
//     collides; fsck --sweep deletes objects and segment files no batch names older
//     than fsck.GroupGrace. Readers fetch only their segment (Store.GetRange);
//     batch rows from before group objects name <prefix>/payload/<first>-<batchId>,
//     still read.
//  4. COMMIT every stream's index rows, batch row and new checkpoint in one
//     transaction: the commit point of the whole tick. Crash before: as 3. Crash
//     after: every batch of the tick is in its tree, durable, but not yet materialized
//     (published_size < size); their waiters may not have heard of it (a signed event
//     retried gets its original result). If the commit fails, every stream of the tick
//     is sealed again alone, so a stream whose batch the catalog refuses fails only
//     its own events (unless the group did commit and only the acknowledgement was
//     lost, which the batch rows tell).
//  5. Wake the waiters: the event is acknowledged. From now on the signed head
//     (Tree) and proofs (Proofs) include it: leaves beyond published_size are proved
//     from the committed leaf hashes (kept in memory by the process that committed
//     them, else read from the index rows) together with the published tiles
//     (tiles.NewEdgeReader), so its inclusion proof verifies at once. Before waking
//     them the committer records the new head in memory (heads.go), from which
//     proofs and signed heads are then served without a catalog read; the live head
//     comes from memory only on a catalog this process alone writes (SQLite), else
//     from the catalog.
//     Crash: as after 4; nothing of 6-7 is needed for the acknowledgement to hold.
//  6. Mirror work, at most every PublishInterval per stream: materialize entry bundles
//     and hash tiles of (published_size, size], derived only from committed state (the
//     payload bundles the batch rows name; the leaf data this process committed is
//     kept in memory from the commit until it is published, leafmemo.go), and
//  7. publish the signed checkpoint note, then advance published_size.
//     Steps 6-7 run for a round of streams at once (a stream's note only after its
//     tiles are durable, its published_size only after its note is), under the
//     catalog's publish locks, always up to the latest committed
//     size, so the checkpoint object never moves backwards even with several replicas.
//     Crash during 6-7: some write-once objects exist, all with the bytes the tree
//     determines; the next publication of this stream (the publish loop, a reader of
//     the tile endpoints through Materialize, or Recover at start-up) writes the same
//     bytes again and finishes.
//
// A failure before 4 fails the batch (of every stream of the tick, after the retry
// alone): every waiter gets an error and nothing is recorded. A failure in 6-7 is
// retried with backoff, in a later round, and delays nobody. A conflict
// on a write-once tile means the store holds another tree of one size: a fork. The
// sequencer stops that stream (errFatal): Submit refuses its events and nothing more
// is published; what was committed before stays committed, since the catalog is the
// tree. Coalescing skips sizes, so a fork is found only at a size both trees published.
package sequencer
