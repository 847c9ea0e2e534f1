package sqlite

import (
	"os"
	"strconv"
	"testing"
)

func TestTmpManyWarm(t *testing.T) {
	warm, _ := strconv.Atoi(os.Getenv("WARM"))
	ticks, _ := strconv.Atoi(os.Getenv("TICKS"))
	if warm == 0 {
		t.Skip()
	}
	byTree, frames := manyStreamTicks(t, Options{}, 1000, warm, ticks)
	t.Logf("warm %d: %.2f frames/event:%s", warm, float64(frames)/float64(1000*ticks), formatTrees(byTree, float64(1000*ticks)))
}
