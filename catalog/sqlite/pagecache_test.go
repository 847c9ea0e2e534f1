package sqlite

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkCommitPageCache measures a small write transaction (ten rows inserted at
// random places of an index, so that its leaves split) on a connection whose page
// cache already holds a 40 MiB file, for the writer's cache sizes: a split that
// reorders its new pages parks one under the lock-byte page's number, and the commit
// then walks the cache's whole hash table (sqlite.go, writerCacheKiB), so the cost of
// a commit grows with the cache, not with what it wrote.
//
//	go test -run '^$' -bench BenchmarkCommitPageCache ./catalog/sqlite/
func BenchmarkCommitPageCache(b *testing.B) {
	for _, kib := range []int{4096, writerCacheKiB, 65536} {
		b.Run(fmt.Sprintf("cache=%dKiB", kib), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "c.db")
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=page_size(1024)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=cache_size(-"+strconv.Itoa(kib)+")")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			exec := func(q string, args ...any) {
				if _, err := db.Exec(q, args...); err != nil {
					b.Fatal(err)
				}
			}
			exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
			exec(`CREATE INDEX t_v ON t(v)`)
			// 40 MiB of rows, read back so that the cache holds as much of them as it can.
			pad := fmt.Sprintf("%0200d", 0)
			exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
				INSERT INTO t(k, v) SELECT i, printf('%08x', abs(random()) % 4294967296) || ?1 FROM n`, pad)
			exec(`SELECT count(*) FROM t WHERE v > ''`)
			rng := rand.New(rand.NewPCG(1, 2))
			k := 100000
			b.ResetTimer()
			for b.Loop() {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				for range 10 {
					k++
					if _, err := tx.Exec(`INSERT INTO t(k, v) VALUES (?, ?)`, k, fmt.Sprintf("%08x", rng.Uint32())+pad); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
