package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// auditExport writes a project_audit export of project whose records name the given
// retention.shredded ranges of stream, after one unrelated record.
func auditExport(t *testing.T, project, stream string, ranges ...seqRange) string {
	t.Helper()
	var buf bytes.Buffer
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	payloads := []map[string]any{{"action": "project.created", "actor": map[string]any{"type": "operator", "id": "op"},
		"status": "success", "target": map[string]any{"type": "project", "id": project}}}
	for _, r := range ranges {
		payloads = append(payloads, map[string]any{"action": "retention.shredded",
			"actor": map[string]any{"type": "service", "id": "retention"}, "status": "success",
			"target":   map[string]any{"type": "epoch", "id": stream + "/2026-01"},
			"metadata": map[string]any{"stream": stream, "epoch": "2026-01", "firstSequence": r.first, "lastSequence": r.last, "count": r.last - r.first + 1}})
	}
	for i, p := range payloads {
		seq := uint64(i) + 1
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		nonce := tlog.Nonce(derive("audit", "nonce", seq))
		canon, commitment, err := tlog.CommitPayload(nonce, raw)
		if err != nil {
			t.Fatal(err)
		}
		at := start.Add(time.Duration(seq) * time.Minute)
		idRand := derive("audit", "id", seq)
		rec := tlog.Record{Leaf: tlog.Leaf{ProjectID: project, Stream: "project_audit", Sequence: seq,
			ID: sampleEventID(at, idRand[:10]), Timestamp: tlog.FormatTime(at), PayloadHash: commitment},
			Payload: canon, Nonce: &nonce, CiphertextHash: strings.Repeat("ab", 32)}
		rec.LeafHash = rec.Leaf.Hash()
		line, err := tlog.EncodeStoredEvent(&rec)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "audit.ndjson")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sampleShreds returns the sample export's project, stream and shredded runs.
func sampleShreds(t *testing.T) (project, stream string, runs shredRuns) {
	t.Helper()
	for _, line := range sampleExportLines(t) {
		rec, err := tlog.DecodeExportLine(line)
		if err != nil {
			t.Fatal(err)
		}
		project, stream = rec.Leaf.ProjectID, rec.Leaf.Stream
		if rec.Shredded() {
			runs.add(rec.Leaf.Sequence)
		}
	}
	if len(runs) < 2 {
		t.Fatalf("the sample export has shredded runs %v; the test wants a held event between two", runs)
	}
	return project, stream, runs
}

func TestCLIVerifyFullAudit(t *testing.T) {
	t.Parallel()
	project, stream, runs := sampleShreds(t)
	first, last := runs[0].first, runs[len(runs)-1].last
	export := fixture("sample.ndjson")

	// Without --audit: the shredded ranges are listed.
	var want []string
	for _, r := range runs {
		want = append(want, fmt.Sprintf("%d-%d", r.first, r.last))
	}
	expect(t, sealtrail(t, nil, "verify", "full", "--export", export), exitOK, "shredded:     "+strings.Join(want, ", "))

	// One record naming the whole epoch (held events inside it are not shredded).
	expect(t, sealtrail(t, nil, "verify", "full", "--export", export, "--audit",
		auditExport(t, project, stream, seqRange{first, last})), exitOK, "OK: ")
	// Two records that together cover it.
	expect(t, sealtrail(t, nil, "verify", "full", "--export", export, "--audit",
		auditExport(t, project, stream, seqRange{first, runs[0].last}, seqRange{runs[1].first, last})), exitOK, "OK: ")
	// A record that stops short: the first sequence it does not name is reported.
	r := sealtrail(t, nil, "verify", "full", "--export", export, "--audit",
		auditExport(t, project, stream, seqRange{first, last - 1}))
	expect(t, r, exitTamper, fmt.Sprintf("sequence %d is shredded but no retention.shredded record", last))
	// Records of another stream or project name nothing here.
	expect(t, sealtrail(t, nil, "verify", "full", "--export", export, "--audit",
		auditExport(t, project, "project_audit", seqRange{first, last})), exitTamper, fmt.Sprintf("sequence %d is shredded", first))
	expect(t, sealtrail(t, nil, "verify", "full", "--export", export, "--audit",
		auditExport(t, "prj_other", stream, seqRange{first, last})), exitUsage, "not the project_audit stream of project")
	expect(t, sealtrail(t, nil, "verify", "full", "--export", export, "--audit", filepath.Join(t.TempDir(), "none")),
		exitUsage, "--audit")
}

func TestCLIVerifyFullCanonical(t *testing.T) {
	t.Parallel()
	lines := sampleExportLines(t)
	for name, edit := range map[string]func([]byte) []byte{
		"whitespace": func(l []byte) []byte { return bytes.Replace(l, []byte(`":`), []byte(`": `), 1) },
		"member order": func(l []byte) []byte {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(m) // sorted by Go, HTML-escaped, but reorder the first member to last:
			i := bytes.IndexByte(out[1:], ',') + 1
			return append(append([]byte{'{'}, out[i+1:len(out)-1]...), append([]byte{','}, append(out[1:i], '}')...)...)
		},
		"escaped": func(l []byte) []byte { return bytes.Replace(l, []byte(`"projectId"`), []byte(`"project\u0049d"`), 1) },
	} {
		t.Run(name, func(t *testing.T) {
			edited := make([][]byte, len(lines))
			copy(edited, lines)
			edited[2] = edit(lines[2])
			if bytes.Equal(edited[2], lines[2]) {
				t.Fatal("the edit changed nothing")
			}
			in := bytes.NewReader(append(bytes.Join(edited, []byte("\n")), '\n'))
			expect(t, sealtrail(t, in, "verify", "full", "--export", "-"), exitUsage, "line 3", "not canonical JSON")
		})
	}
}
