// Package integration holds black-box tests of the built binaries against real servers.
//
// TestMain builds cmd/sealtraild once (with -race when the tests run with -race); each
// test starts `sealtraild serve` as a child process on a free loopback port with its own
// data directory (and, for the replica tests, a fresh PostgreSQL database from
// internal/testenv), talks to it over HTTP and through `sealtraild admin`, stops it
// with SIGTERM and checks that it exited 0. Where a test needs to look behind the API
// (the project_audit stream, the committed trees), it stops the service and opens the
// service's own catalog, object store and key files with the library packages, the way
// an auditor with access to the storage would.
package integration
