package sqlite

import (
	"context"
	"database/sql"
	"os"
	"testing"
)

func TestZZWALSample(t *testing.T) {
	path := os.Getenv("ZZ_WAL_SAMPLE")
	if path == "" {
		t.Skip()
	}
	c, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	byTree, frames := walFramesByTree(t, context.Background(), c, path)
	t.Logf("%d frames, percent by tree:%s", frames, formatTrees(byTree, float64(frames)/100))
}
