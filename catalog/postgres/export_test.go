package postgres

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenCounting is Open with every write of every pool connection to the server counted
// in writes, and no liveness ping on acquire: with pgx's pipelining each write is one
// round trip the caller waits for.
func OpenCounting(ctx context.Context, dsn string, writes *atomic.Int64) (*DB, error) {
	return open(ctx, dsn, Options{}, func(cfg *pgxpool.Config) {
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, writes: writes}, nil
		}
	})
}

// SetChill sets how long a stream whose cached checkpoint was stale goes without a
// guess.
func SetChill(db *DB, d time.Duration) { db.seals.chillFor = d }

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}
