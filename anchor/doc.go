// Package anchor runs the service-wide tree_heads log and its publication.
//
// Every interval one job, across all replicas (a lease in the catalog), appends one leaf
// per project-stream whose committed head grew since its last recorded head: the signed
// tree head of that stream (tlog.TreeHeadLeaf). The tree_heads log is itself a C2SP
// tlog-tiles log in the object store under the prefix "tree_heads/", with its own
// checkpoint (origin "<origin>/tree_heads") signed by the service key. Only that
// checkpoint goes to the outside world, through the configured Publishers (C2SP
// tlog-witness cosigners here, Sigstore Rekor and RFC 3161 timestamp authorities in
// anchor/rekor and anchor/tsa), so one publication an interval covers every tenant.
// Each head then gets its anchor: its inclusion proof in tree_heads, the checkpoint and
// the publishers' proofs (tlog.AnchorProof), which sealtrail verify anchor checks
// offline.
//
// Commit order, as in the sequencer: the heads and the log's new state are one
// catalog transaction (the commit point, a compare-and-swap on the log's size, so two
// runners never write two leaves at one index, and the tree_heads table keeps one head
// per stream and size); tiles and the checkpoint are then derived from committed state
// only, so a crash anywhere is repaired by the next run writing the same bytes; anchors
// are recorded last, and a run after a crash publishes the current checkpoint again.
// docs/anchoring.md has the formats and the decisions.
package anchor
