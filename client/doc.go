// Package client is the Go SDK of Sealtrail. It calls every /api/v1 route a project
// API key may use, and it verifies as it goes:
//
//   - it pins, per base URL and stream, the last signed tree head it verified together
//     with the service public key (trusted on first use unless Config.ServicePublicKey
//     is set), in a pluggable HeadStore;
//   - CheckConsistency fetches the current head, checks its signature and a
//     consistency proof from the pinned head with local hash arithmetic, and moves the
//     pin forward; after Log and Query the same check runs in the background, throttled
//     and off the caller's path;
//   - a failed check is a *TamperError (inconsistent_tree, tree_shrunk,
//     bad_sth_signature, service_key_changed) that poisons the client: every later
//     call returns that same error;
//   - with a customer signing key, Log mints the event id and nonce, commits to the
//     payload and signs it with the same tlog code the service and the offline
//     verifier use, so the service never holds the key that attests the events.
//
// Every byte that is hashed or signed comes from package tlog. Wrappers that record
// application code and agent tool calls are in package client/wrap.
package client
