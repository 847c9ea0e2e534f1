package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// Page sizes of the spec.
const (
	eventsDefaultLimit = 50
	eventsMaxLimit     = 500
	exportPage         = 1000
)

// query reads the filter parameters shared by /events and /export.
func (s *Server) query(r *http.Request, p *params) catalog.Query {
	key := apiKeyFrom(r)
	q := catalog.Query{
		Log:      catalog.LogID{ProjectID: key.ProjectID, Stream: catalog.StreamEvents},
		Action:   p.str("action", 1024),
		Status:   p.str("status", 64),
		ActorID:  p.str("actorId", 1024),
		TargetID: p.str("targetId", 1024),
		From:     p.time("from"),
		To:       p.time("to"),
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		p.fail("from must be before to (from is inclusive, to exclusive)")
	}
	return q
}

// stored reads the full stored events of index rows, in their order.
func (s *Server) stored(r *http.Request, log catalog.LogID, rows []catalog.Event) ([]json.RawMessage, error) {
	if len(rows) == 0 {
		return []json.RawMessage{}, nil
	}
	seqs := make([]uint64, len(rows))
	for i, e := range rows {
		seqs[i] = e.Sequence
	}
	// Events wants ascending sequences; pages may be descending.
	asc := seqs
	desc := len(seqs) > 1 && seqs[0] > seqs[1]
	if desc {
		asc = make([]uint64, len(seqs))
		for i, v := range seqs {
			asc[len(seqs)-1-i] = v
		}
	}
	evs, err := s.cfg.Sequencer.Events(r.Context(), log, asc)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(evs))
	for i := range evs {
		rec := evs[i].Record()
		line, err := tlog.EncodeStoredEvent(&rec)
		if err != nil {
			return nil, err
		}
		if desc {
			out[len(evs)-1-i] = line
		} else {
			out[i] = line
		}
	}
	return out, nil
}

// events is GET /api/v1/events: newest first, keyset-paged by an opaque cursor, or in
// entity mode all events of an entity (no cursor).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	key := apiKeyFrom(r)
	p := newParams(r)
	entityType, entityID := p.str("entityType", 1024), p.str("entityId", 1024)
	limit := p.limit(eventsDefaultLimit, eventsMaxLimit)
	var q catalog.Query
	entityMode := entityType != "" || entityID != ""
	if entityMode {
		if entityType == "" || entityID == "" {
			p.fail("entityType and entityId must be given together")
		}
		dir := catalog.Direction(r.URL.Query().Get("direction"))
		switch dir {
		case "":
			dir = catalog.DirectionAll
		case catalog.DirectionAll, catalog.DirectionIncoming, catalog.DirectionOutgoing:
		default:
			p.fail("direction must be outgoing, incoming or all")
		}
		q = catalog.Query{Log: catalog.LogID{ProjectID: key.ProjectID, Stream: catalog.StreamEvents},
			Entity: &catalog.Entity{Type: entityType, ID: entityID}, Direction: dir}
	} else {
		q = s.query(r, p)
		if c := r.URL.Query().Get("cursor"); c != "" {
			seq, err := decodeCursor(key.ProjectID, c)
			if err != nil {
				p.fail("%v", err)
			}
			q.Cursor = seq
		}
	}
	if p.err != nil {
		writeError(w, http.StatusBadRequest, p.err.Error())
		return
	}
	q.Descending, q.Limit = true, limit
	rows, err := s.cfg.Catalog.QueryEvents(r.Context(), q)
	if err != nil {
		s.internal(w, r, "query events", err)
		return
	}
	evs, err := s.stored(r, q.Log, rows)
	if err != nil {
		s.internal(w, r, "read events", err)
		return
	}
	resp := map[string]any{"events": evs}
	if !entityMode && len(rows) == limit && rows[len(rows)-1].Sequence > 1 {
		resp["nextCursor"] = encodeCursor(key.ProjectID, rows[len(rows)-1].Sequence)
	}
	writeJSON(w, http.StatusOK, resp)
}

// csvColumns is the CSV export layout: identity members, then the payload members
// (entities flattened, context and metadata as JCS text).
var csvColumns = []string{
	"sequence", "id", "timestamp", "action", "status",
	"actorType", "actorId", "actorDisplay", "targetType", "targetId", "targetDisplay", "risk",
	"requestId", "sessionId", "ipAddress", "userAgent", "agentId", "model", "toolName", "toolCallId",
	"approvalId", "policyVersion", "inputHash", "outputHash", "context", "metadata",
	"payloadHash", "leafHash", "payloadNonce", "ciphertextHash", "signingKeyId", "clientSignature",
	"projectId", "stream",
}

// export is GET /api/v1/export: matching events oldest first, streamed page by page.
// The NDJSON of a whole stream is what `sealtrail verify full` reads.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	key := apiKeyFrom(r)
	p := newParams(r)
	q := s.query(r, p)
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "json" {
		p.fail("format must be csv or json")
	}
	maxRows, capped := p.uint("max")
	if capped && maxRows == 0 {
		p.fail("max must be at least 1")
	}
	if p.err != nil {
		writeError(w, http.StatusBadRequest, p.err.Error())
		return
	}
	ext, ctype := "ndjson", "application/x-ndjson"
	if format == "csv" {
		ext, ctype = "csv", "text/csv; charset=utf-8"
	}
	flusher, _ := w.(http.Flusher)
	isCSV := format == "csv"
	var line []byte
	started := false
	// start commits to a 200 download; it happens once the first page was read, so a
	// failure before any data is a plain 500 rather than a cut-off download.
	start := func() {
		started = true
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-events-%s.%s"`,
			key.ProjectID, time.Now().UTC().Format("20060102T150405Z"), ext))
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if isCSV {
			_, _ = w.Write(appendCSVLine(nil, csvColumns))
		}
	}
	var written uint64
	q.Limit = exportPage
	for {
		if capped {
			q.Limit = int(min(uint64(exportPage), maxRows-written))
		}
		rows, err := s.cfg.Catalog.QueryEvents(r.Context(), q)
		var evs []json.RawMessage
		if err == nil && len(rows) > 0 {
			evs, err = s.stored(r, q.Log, rows)
		}
		if err != nil && !started {
			s.internal(w, r, "export", err)
			return
		}
		if !started {
			start()
		}
		for _, e := range evs {
			if err != nil {
				break
			}
			if isCSV {
				line = appendCSVLine(line[:0], csvRow(e))
			} else {
				line = append(append(line[:0], e...), '\n')
			}
			_, err = w.Write(line)
		}
		if err != nil {
			// Headers are gone; abort the response so the client sees a truncated
			// download, never a short file that looks complete.
			s.cfg.Logger.ErrorContext(r.Context(), "export failed mid-stream", "err", err, "request_id", requestID(r))
			panic(http.ErrAbortHandler)
		}
		written += uint64(len(rows))
		if flusher != nil {
			flusher.Flush()
		}
		if len(rows) < q.Limit || (capped && written >= maxRows) {
			return
		}
		q.Cursor = rows[len(rows)-1].Sequence
	}
}

func csvRow(line json.RawMessage) []string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(line, &m)
	str := func(raw json.RawMessage) string {
		if len(raw) == 0 || string(raw) == "null" {
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw) // numbers and JCS objects as text
	}
	var actor, target map[string]json.RawMessage
	_ = json.Unmarshal(m["actor"], &actor)
	_ = json.Unmarshal(m["target"], &target)
	row := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		switch c {
		case "actorType", "actorId", "actorDisplay":
			row[i] = str(actor[map[string]string{"actorType": "type", "actorId": "id", "actorDisplay": "display"}[c]])
		case "targetType", "targetId", "targetDisplay":
			row[i] = str(target[map[string]string{"targetType": "type", "targetId": "id", "targetDisplay": "display"}[c]])
		default:
			row[i] = str(m[c])
		}
	}
	return row
}

// appendCSVLine appends one CSV record to dst, as OWASP recommends against CSV
// injection: every cell is quoted (quotes doubled, RFC 4180), and a cell a spreadsheet
// would run as a formula (starting with =, +, -, @, tab or CR) gets a leading single
// quote, so it shows as text. The NDJSON export is the exact form; see
// docs/api-decisions.md.
func appendCSVLine(dst []byte, cells []string) []byte {
	for i, c := range cells {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		if c != "" && strings.IndexByte("=+-@\t\r", c[0]) >= 0 {
			dst = append(dst, '\'')
		}
		for j := 0; j < len(c); j++ {
			if c[j] == '"' {
				dst = append(dst, '"')
			}
			dst = append(dst, c[j])
		}
		dst = append(dst, '"')
	}
	return append(dst, '\n')
}
