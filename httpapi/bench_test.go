package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// BenchmarkIngest measures the handler's CPU for one normal event of about 1 KB
// (an unsigned event enriched with the client address and a browser User-Agent): the
// whole path from authentication to the 202, with a sequencer that seals at once, so
// the number is the API's own cost per request.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "c.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	seq := scriptedSequencer{}
	ctl, _, token := benchProject(b, db, seq, catalog.ScopeWrite)
	_, key, _ := tlog.GenerateKey()
	s, err := New(Config{Control: ctl, Sequencer: seq, Catalog: db, Key: key, Store: mem.New(), RateLimit: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	body := `{"action":"document.shared","actor":{"type":"user","id":"usr_8a7d6c5b4a39","display":"Alice Example"},` +
		`"target":{"type":"document","id":"doc_1f2e3d4c5b6a","display":"Quarterly report"},"risk":"medium",` +
		`"requestId":"req_0123456789abcdef","sessionId":"ses_fedcba9876543210","toolName":"share",` +
		`"context":{"tenant":"acme","region":"eu-west-1","feature":"sharing","flags":["beta","audit"]},` +
		`"metadata":{"recipients":["bob@example.com","carol@example.com"],"permission":"view","expiresInDays":30,` +
		`"note":"` + strings.Repeat("shared for the quarterly review; ", 16) + `"}}`
	if n := len(body); n < 900 || n > 1200 {
		b.Fatalf("body is %d bytes, want about 1 KB", n)
	}
	const ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
	h := s.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/log", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", ua)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			b.Fatalf("got %d %s", rec.Code, rec.Body)
		}
	}
	// CPU time, unlike ns/op, does not grow when other processes share the cores.
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchProject returns a control service over db and seq, a new project's id and an
// API key of the project with scope.
func benchProject(b *testing.B, db *sqlite.DB, seq control.Sequencer, scope string) (*control.Service, string, string) {
	b.Helper()
	ctx := context.Background()
	ctl := control.New(db, seq, nil)
	actor := control.Actor{Type: "operator", ID: "bench"}
	p, err := ctl.CreateProject(ctx, actor, "p")
	if err != nil {
		b.Fatal(err)
	}
	token, _, err := ctl.CreateAPIKey(ctx, actor, p.ID, "", []string{scope}, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	return ctl, p.ID, token
}
