// Package tiles stores Sealtrail's logs in object storage, in the C2SP tlog-tiles
// layout, and reads proofs back from it.
//
// Each project-stream is one log under its own prefix (see [StreamPrefix]):
//
//	<projectId>/<stream>/checkpoint                   signed note, overwritten
//	<projectId>/<stream>/tile/<L>/<N>[.p/<W>]         RFC 6962 hash tiles, height 8
//	<projectId>/<stream>/tile/entries/<N>[.p/<W>]     entry bundles (leaf data)
//	<projectId>/<stream>/payload/<first>-<batchId>    one payload bundle per batch, private
//
// Every tile and bundle path, partial ones included, names bytes that are fixed by the
// tree, so they are all written once ([Store.Create]); only the checkpoint is
// overwritten. A [Writer] materializes a committed batch into tiles and bundles, and a
// [Reader] builds inclusion and consistency proofs from them for any tree size up to
// one the caller trusts, authenticating every tile it reads against that tree's root.
//
// The tile math is golang.org/x/mod/sumdb/tlog's (with height 8 and the C2SP path
// syntax); its Hash type is the one golang.org/x/mod and Sealtrail's tlog share.
// The object-store interface, [Store], is declared here, by its consumer; drivers live
// in tiles/fs, tiles/mem, tiles/s3 and tiles/gcs, selected by URL in tiles/storeurl,
// and all pass the conformance suite in tiles/storetest.
package tiles
