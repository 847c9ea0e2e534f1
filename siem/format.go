package siem

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sealtrail/sealtrail/tlog"
)

// Formats of a delivered event.
const (
	FormatOCSF = "ocsf" // OCSF 1.3 JSON: API Activity (6003), Authentication (3002) for log-ins
	FormatCEF  = "cef"  // ArcSight Common Event Format, one line
	FormatJSON = "json" // the native export line plus treeSize (docs/formats.md)
)

// Formats lists the formats in the order the docs give them.
var Formats = []string{FormatOCSF, FormatCEF, FormatJSON}

// Event is one sealed event as a destination receives it: the export line of
// docs/formats.md, its decoded members, and the size of the signed checkpoint it was
// read under (TreeSize >= Sequence), so a SIEM can later ask for its inclusion proof in
// that tree.
type Event struct {
	Sequence uint64
	ID       string
	LeafHash tlog.Hash
	TreeSize uint64
	Line     []byte         // RFC 8785 export line
	Members  map[string]any // Line decoded
}

// NewEvent builds an Event from a stored record read under a checkpoint of treeSize.
func NewEvent(rec *tlog.Record, treeSize uint64) (Event, error) {
	line, err := tlog.EncodeStoredEvent(rec)
	if err != nil {
		return Event{}, fmt.Errorf("siem: export line of sequence %d: %w", rec.Leaf.Sequence, err)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return Event{}, fmt.Errorf("siem: decode export line: %w", err)
	}
	return Event{Sequence: rec.Leaf.Sequence, ID: rec.Leaf.ID, LeafHash: rec.LeafHash, TreeSize: treeSize,
		Line: line, Members: m}, nil
}

// Render formats e; the result is a JSON object for ocsf and json, a text line for cef.
func Render(format string, e *Event) ([]byte, error) {
	switch format {
	case FormatJSON:
		return renderJSON(e)
	case FormatOCSF:
		return json.Marshal(OCSF(e))
	case FormatCEF:
		return []byte(CEF(e)), nil
	}
	return nil, fmt.Errorf("siem: unknown format %q", format)
}

// renderJSON is the export line with one more member, treeSize, kept in JCS order.
func renderJSON(e *Event) ([]byte, error) {
	m := make(map[string]json.RawMessage, len(e.Members)+1)
	if err := json.Unmarshal(e.Line, &m); err != nil {
		return nil, fmt.Errorf("siem: export line: %w", err)
	}
	m["treeSize"] = json.RawMessage(strconv.FormatUint(e.TreeSize, 10))
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("siem: json line: %w", err)
	}
	return tlog.Canonicalize(raw)
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

// epochMS is the event's receive time in Unix milliseconds (0 if unreadable).
func epochMS(e *Event) int64 {
	t, err := tlog.ParseTime(str(e.Members, "timestamp"))
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// verb is the last dot-separated part of an action, lower case: "api_key.created" is
// "created".
func verb(action string) string {
	if i := strings.LastIndexByte(action, '.'); i >= 0 {
		action = action[i+1:]
	}
	return strings.ToLower(action)
}

var activityVerbs = map[string]int{
	"create": 1, "created": 1, "add": 1, "added": 1, "register": 1, "registered": 1, "insert": 1, "post": 1,
	"read": 2, "get": 2, "list": 2, "view": 2, "viewed": 2, "export": 2, "exported": 2, "download": 2,
	"update": 3, "updated": 3, "set": 3, "change": 3, "changed": 3, "modify": 3, "modified": 3, "put": 3, "patch": 3,
	"delete": 4, "deleted": 4, "remove": 4, "removed": 4, "revoke": 4, "revoked": 4, "destroy": 4, "destroyed": 4,
}

var authVerbs = map[string]int{
	"login": 1, "logon": 1, "signin": 1, "sign_in": 1, "logged_in": 1,
	"logout": 2, "logoff": 2, "signout": 2, "sign_out": 2, "logged_out": 2,
}

// riskSeverity maps the event's risk to OCSF severity_id (absent: 1, Informational).
func riskSeverity(risk string) int {
	switch risk {
	case "low":
		return 2
	case "medium":
		return 3
	case "high":
		return 4
	case "critical":
		return 5
	}
	return 1
}

// statusID maps the event's status to OCSF status_id: 1 success, 2 failure, 99 other.
func statusID(status string) int {
	switch strings.ToLower(status) {
	case "success", "succeeded", "ok", "allowed":
		return 1
	case "failure", "failed", "error", "denied", "rejected":
		return 2
	case "":
		return 0
	}
	return 99
}

// OCSF maps e to an OCSF 1.3 event: Authentication (3002) for log-in and log-out
// actions, API Activity (6003) for everything else. Sealtrail's own proof data
// (sequence, leaf hash, tree size, project and stream) is in metadata and unmapped.
func OCSF(e *Event) map[string]any {
	m := e.Members
	action := str(m, "action")
	actor := obj(m, "actor")
	user := map[string]any{"uid": str(actor, "id")}
	if user["uid"] == "" {
		user["uid"] = "unknown"
	}
	if d := str(actor, "display"); d != "" {
		user["name"] = d
	}
	sev := riskSeverity(str(m, "risk"))
	out := map[string]any{
		"time":        epochMS(e),
		"severity_id": sev,
		"message":     action,
		"metadata": map[string]any{
			"version":     "1.3.0",
			"uid":         e.ID,
			"sequence":    e.Sequence,
			"log_name":    str(m, "stream"),
			"product":     map[string]any{"name": "Sealtrail", "vendor_name": "Sealtrail", "uid": str(m, "projectId")},
			"logged_time": epochMS(e),
		},
		"unmapped": map[string]any{"sealtrail": map[string]any{
			"sequence": e.Sequence, "leafHash": tlog.Hex(e.LeafHash), "treeSize": e.TreeSize,
			"projectId": str(m, "projectId"), "stream": str(m, "stream"), "actorType": str(actor, "type"),
			"payloadHash": str(m, "payloadHash"),
		}},
	}
	if st := str(m, "status"); st != "" {
		out["status_id"] = statusID(st)
		out["status"] = st
	}
	class, category, activity := 6003, 6, 99
	if a, ok := authVerbs[verb(action)]; ok {
		class, category, activity = 3002, 3, a
		out["user"] = user
		out["service"] = map[string]any{"name": "Sealtrail", "uid": str(m, "projectId")}
	} else {
		if a, ok := activityVerbs[verb(action)]; ok {
			activity = a
		}
		out["actor"] = map[string]any{"user": user}
		out["api"] = map[string]any{"operation": action, "service": map[string]any{"name": "Sealtrail"}}
		if str(m, "ipAddress") == "" {
			// src_endpoint is required here and needs one identifying member; the
			// event did not carry the caller's address.
			out["src_endpoint"] = map[string]any{"name": "unknown"}
		}
		if t := obj(m, "target"); t != nil {
			res := map[string]any{"uid": str(t, "id"), "type": str(t, "type")}
			if d := str(t, "display"); d != "" {
				res["name"] = d
			}
			out["resources"] = []any{res}
		}
	}
	if ip := str(m, "ipAddress"); ip != "" {
		out["src_endpoint"] = map[string]any{"ip": ip}
	}
	if ua := str(m, "userAgent"); ua != "" {
		out["http_request"] = map[string]any{"user_agent": ua}
	}
	out["class_uid"] = class
	out["category_uid"] = category
	out["activity_id"] = activity
	out["type_uid"] = class*100 + activity
	return out
}

// CEF renders e as one ArcSight CEF:0 line.
func CEF(e *Event) string {
	m := e.Members
	action := str(m, "action")
	actor, target := obj(m, "actor"), obj(m, "target")
	var b strings.Builder
	b.WriteString("CEF:0|Sealtrail|Sealtrail|1|")
	b.WriteString(cefHeader(action))
	b.WriteByte('|')
	b.WriteString(cefHeader(action))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(cefSeverity(str(m, "risk"))))
	b.WriteByte('|')
	ext := [][2]string{
		{"rt", strconv.FormatInt(epochMS(e), 10)},
		{"externalId", e.ID},
		{"act", action},
		{"outcome", str(m, "status")},
		{"suser", str(actor, "id")},
		{"src", str(m, "ipAddress")},
		{"requestClientApplication", str(m, "userAgent")},
		{"duid", str(target, "id")},
		{"cn1Label", "sequence"}, {"cn1", strconv.FormatUint(e.Sequence, 10)},
		{"cn2Label", "treeSize"}, {"cn2", strconv.FormatUint(e.TreeSize, 10)},
		{"cs1Label", "leafHash"}, {"cs1", tlog.Hex(e.LeafHash)},
		{"cs2Label", "projectId"}, {"cs2", str(m, "projectId")},
		{"cs3Label", "stream"}, {"cs3", str(m, "stream")},
		{"cs4Label", "actorType"}, {"cs4", str(actor, "type")},
		{"cs5Label", "targetType"}, {"cs5", str(target, "type")},
	}
	first := true
	for _, kv := range ext {
		if kv[1] == "" {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(cefValue(kv[1]))
	}
	return b.String()
}

func cefSeverity(risk string) int {
	switch risk {
	case "low":
		return 3
	case "medium":
		return 5
	case "high":
		return 8
	case "critical":
		return 10
	}
	return 1
}

// cefHeader escapes a header field: backslash and pipe; line breaks become spaces.
func cefHeader(s string) string {
	return strings.NewReplacer(`\`, `\\`, `|`, `\|`, "\r", " ", "\n", " ").Replace(s)
}

// cefValue escapes an extension value: backslash, equals sign and line breaks.
func cefValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `=`, `\=`, "\r\n", `\n`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// unixTime formats t as seconds with milliseconds, as Splunk HEC's time field.
func unixTime(ms int64) json.Number {
	return json.Number(strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64))
}
