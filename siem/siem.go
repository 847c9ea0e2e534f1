// Package siem streams each project-stream to the operator's SIEMs: syslog (RFC 5424
// over TLS), Splunk's HTTP Event Collector, and HTTPS webhooks signed as Standard
// Webhooks describes, in OCSF, CEF or the native export line.
//
// Delivery is at least once and in order. Each destination has a cursor in the catalog
// (the last sequence its receiver acknowledged); a runner reads the events after it
// from the signed tree, delivers them in batches, and only then moves the cursor with a
// compare-and-set under its lease. A crash between delivery and the cursor's move
// resends that batch; nothing is ever skipped. The lease (catalog.SIEMCatalog) keeps
// one delivering runner per destination across replicas. Failed attempts back off
// exponentially; after RunnerConfig.MaxAttempts in a row the destination is
// dead-lettered, visible to the operator with its last error, until resumed.
//
// Every delivered event carries its sequence, its leaf hash and the size of the signed
// checkpoint it was read under, so a SIEM can prove later what it received with an
// inclusion proof. Destinations are created, paused, resumed and deleted through
// Admin, which records each change in the project's project_audit stream.
//
// Decisions and wire formats: docs/siem.md.
package siem
