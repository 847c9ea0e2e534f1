package sqlite

// SoleWriter reports that this process is the only writer of the database: one
// process per file (the package comment). The sequencer then serves the live tree
// of a project-stream from the head its own commits left in memory, without reading
// the checkpoint row for each proof or signed head (sequencer/heads.go).
func (db *DB) SoleWriter() bool { return true }
