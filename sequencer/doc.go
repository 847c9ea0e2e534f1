// Package sequencer turns submitted events into sealed leaves of their project-stream's
// tile log: durably, in order, before they are acknowledged.
//
// One logSequencer runs per active project-stream (created on first use, dropped when
// idle). Submissions join the pending pool; the seal loop swaps the pool out (under
// load a pool that has just begun lingers up to 2 ms, so a batch is not cut at the
// first of the producers the last acknowledgement released), seals it as one batch
// under the project-stream lock (a large batch is built on several cores), and hands
// the committed batch to the
// publish loop, which materializes tiles and the checkpoint and then wakes the
// batch's waiters. Sealing batch N+1 overlaps publishing batch N.
//
// The commit order, and what a crash at each step leaves behind:
//
//  1. Take the project-stream lock and read the checkpoint (catalog.Seal).
//     Crash: nothing written; the lock dies with the transaction or process.
//  2. Assign sequences cp.Size+1.., mint ids and nonces, encrypt payloads, build leaves
//     and append their hashes to the compact range read from the checkpoint.
//     Crash: nothing written.
//  3. Write the payload bundle payload/<first>-<batchId> (batchId random), while the
//     catalog inserts the index rows; the catalog waits for the write to be durable
//     (SealBatch.Durable) before it commits, and rolls back if it failed.
//     Crash: an orphan object no batch row names. The next batch reuses the same
//     sequences under another batchId, so it never collides; a sweeper may delete it.
//  4. COMMIT index rows, the batch row and the new checkpoint in one transaction: the
//     commit point. Crash before: as 3. Crash after: the batch is in the tree but not
//     yet materialized (published_size < size) and nobody was acknowledged.
//  5. Materialize entry bundles and hash tiles of (published_size, size], derived
//     only from committed state (the payload bundles the batch rows name), and
//  6. publish the signed checkpoint note, then advance published_size.
//     Steps 5-6 run under the catalog's publish lock, always up to the latest committed
//     size, so the checkpoint object never moves backwards even with several replicas.
//     Crash during 5-6: some write-once objects exist, all with the bytes the tree
//     determines; the next publish of this stream (the next batch, or Recover at
//     start-up) writes the same bytes again and finishes.
//  7. Wake the waiters: only now is an event acknowledged, and an inclusion proof for
//     it can be served at once.
//
// A failure before 4 fails the batch: every waiter gets an error and nothing is
// recorded. A failure in 5-6 is retried with backoff; waiters keep waiting (bounded by
// their context) because their events are already committed. A conflict on a
// write-once tile means two different trees of one size: a fork. The sequencer stops
// that stream (errFatal) rather than publish anything else.
package sequencer
