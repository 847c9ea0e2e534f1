//go:build race

package sqlite

// raceEnabled: the race detector makes SQLite several times slower, so the tests that
// seal tens of thousands of rows to count bytes seal fewer.
const raceEnabled = true
