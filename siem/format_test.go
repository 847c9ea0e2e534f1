package siem

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sealtrail/sealtrail/tlog"
)

// record builds a sealed record of payload (JSON) at seq, as the sequencer stores it.
func record(t testing.TB, stream string, seq uint64, payload string) tlog.Record {
	t.Helper()
	nonce, err := tlog.NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	canon, commit, err := tlog.CommitPayload(nonce, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	leaf := tlog.Leaf{ProjectID: "prj_test", Stream: stream, Sequence: seq, ID: "evt_" + strings.Repeat("a", 25) + string(rune('a'+seq%26)),
		Timestamp: "2026-11-24T10:00:00.123Z", PayloadHash: commit}
	return tlog.Record{Leaf: leaf, LeafHash: leaf.Hash(), Payload: canon, Nonce: &nonce}
}

func event(t testing.TB, stream string, seq, treeSize uint64, payload string) Event {
	t.Helper()
	rec := record(t, stream, seq, payload)
	e, err := NewEvent(&rec, treeSize)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ocsfSchemas compiles the vendored OCSF subset (testdata/ocsf) with a JSON Schema
// 2020-12 validator.
func ocsfSchemas(t *testing.T) map[int]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, name := range []string{"objects", "api_activity", "authentication"} {
		f, err := os.Open(filepath.Join("testdata", "ocsf", name+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource("https://schema.ocsf.io/sealtrail-subset/"+name+".schema.json", doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[int]*jsonschema.Schema{}
	for class, name := range map[int]string{6003: "api_activity", 3002: "authentication"} {
		s, err := c.Compile("https://schema.ocsf.io/sealtrail-subset/" + name + ".schema.json")
		if err != nil {
			t.Fatal(err)
		}
		out[class] = s
	}
	return out
}

func validateOCSF(t *testing.T, schemas map[int]*jsonschema.Schema, rendered []byte) map[string]any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(rendered))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	class, _ := m["class_uid"].(json.Number).Int64()
	s := schemas[int(class)]
	if s == nil {
		t.Fatalf("class_uid %d has no schema: %s", class, rendered)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("OCSF %d invalid: %v\n%s", class, err, rendered)
	}
	return m
}

func TestOCSFValidates(t *testing.T) {
	schemas := ocsfSchemas(t)
	cases := []struct {
		name, stream, payload string
		class, activity       int64
	}{
		{"create with address", "events", `{"action":"document.created","actor":{"type":"user","id":"u1","display":"Alice"},
			"target":{"type":"document","id":"d1","display":"Q3"},"status":"success","risk":"high","ipAddress":"203.0.113.9",
			"userAgent":"curl/8"}`, 6003, 1},
		{"unknown verb, no address", "events", `{"action":"tool.invoke","actor":{"type":"agent","id":"a1"}}`, 6003, 99},
		{"delete with v6", "events", `{"action":"file.deleted","actor":{"type":"user","id":"u2"},"ipAddress":"2001:db8::1","status":"failure"}`, 6003, 4},
		{"control plane", "project_audit", `{"action":"api_key.revoked","actor":{"type":"operator","id":"ops"},"target":{"type":"api_key","id":"k1"},"status":"success"}`, 6003, 4},
		{"login", "events", `{"action":"user.login","actor":{"type":"user","id":"u3"},"status":"failure","risk":"medium"}`, 3002, 1},
		{"login with address", "events", `{"action":"auth.signin","actor":{"type":"user","id":"u4","display":"Bo"},"ipAddress":"192.0.2.1","userAgent":"Mozilla/5.0","status":"success"}`, 3002, 1},
		{"logout", "events", `{"action":"user.logout","actor":{"type":"user","id":"u3"}}`, 3002, 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := event(t, tc.stream, uint64(i+1), 40, tc.payload)
			out, err := Render(FormatOCSF, &e)
			if err != nil {
				t.Fatal(err)
			}
			m := validateOCSF(t, schemas, out)
			class, _ := m["class_uid"].(json.Number).Int64()
			act, _ := m["activity_id"].(json.Number).Int64()
			if class != tc.class || act != tc.activity {
				t.Fatalf("class %d activity %d, want %d %d", class, act, tc.class, tc.activity)
			}
			st := m["unmapped"].(map[string]any)["sealtrail"].(map[string]any)
			if st["leafHash"] != tlog.Hex(e.LeafHash) || st["treeSize"].(json.Number).String() != "40" ||
				st["sequence"].(json.Number).String() != e.Members["sequence"].(json.Number).String() {
				t.Fatalf("proof data = %v", st)
			}
		})
	}
}

// TestOCSFSchemaCatches makes sure the vendored schema is not vacuous: events with a
// required attribute missing or an invented one fail.
func TestOCSFSchemaCatches(t *testing.T) {
	schemas := ocsfSchemas(t)
	e := event(t, "events", 1, 1, `{"action":"document.created","actor":{"type":"user","id":"u1"}}`)
	for name, mutate := range map[string]func(m map[string]any){
		"no actor":        func(m map[string]any) { delete(m, "actor") },
		"no src_endpoint": func(m map[string]any) { delete(m, "src_endpoint") },
		"empty endpoint":  func(m map[string]any) { m["src_endpoint"] = map[string]any{} },
		"bad type_uid":    func(m map[string]any) { m["type_uid"] = 600302 },
		"invented":        func(m map[string]any) { m["sealtrail_sequence"] = 1 },
		"bad severity":    func(m map[string]any) { m["severity_id"] = 7 },
		"no version":      func(m map[string]any) { delete(m["metadata"].(map[string]any), "version") },
	} {
		m := OCSF(&e)
		mutate(m)
		raw, _ := json.Marshal(m)
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err := schemas[6003].Validate(v); err == nil {
			t.Errorf("%s: the schema accepted %s", name, raw)
		}
	}
}

func TestJSONLineIsExportLinePlusTreeSize(t *testing.T) {
	e := event(t, "events", 7, 9, `{"action":"a.b","actor":{"type":"user","id":"u"},"metadata":{"z":1,"a":"x"}}`)
	out, err := Render(FormatJSON, &e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["treeSize"]) != "9" || string(m["sequence"]) != "7" || string(m["leafHash"]) != `"`+tlog.Hex(e.LeafHash)+`"` {
		t.Fatalf("line %s", out)
	}
	delete(m, "treeSize")
	raw, _ := json.Marshal(m)
	back, err := tlog.Canonicalize(raw)
	if err != nil || !bytes.Equal(back, e.Line) {
		t.Fatalf("without treeSize the line is not the export line:\n%s\n%s", back, e.Line)
	}
	if canon, err := tlog.Canonicalize(out); err != nil || !bytes.Equal(canon, out) {
		t.Fatalf("json line is not canonical: %s", out)
	}
}

func TestCEF(t *testing.T) {
	e := event(t, "events", 3, 5, `{"action":"a|b=c","actor":{"type":"user","id":"x=y\\z"},"risk":"critical",
		"target":{"type":"doc","id":"line1\nline2"},"ipAddress":"198.51.100.7"}`)
	got := CEF(&e)
	wantPrefix := `CEF:0|Sealtrail|Sealtrail|1|a\|b=c|a\|b=c|10|`
	if !strings.HasPrefix(got, wantPrefix) {
		t.Fatalf("header: %s", got)
	}
	for _, want := range []string{`act=a|b\=c`, `suser=x\=y\\z`, `duid=line1\nline2`, `src=198.51.100.7`,
		`cn1Label=sequence cn1=3`, `cn2Label=treeSize cn2=5`, `cs1Label=leafHash cs1=` + tlog.Hex(e.LeafHash),
		`externalId=` + e.ID, `rt=`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	if strings.ContainsAny(got, "\r\n") {
		t.Fatalf("CEF line has a line break: %q", got)
	}
}

func TestShreddedEvent(t *testing.T) {
	rec := record(t, "events", 2, `{"action":"x.y","actor":{"type":"user","id":"u"}}`)
	rec.Payload, rec.Nonce = nil, nil
	e, err := NewEvent(&rec, 2)
	if err != nil {
		t.Fatal(err)
	}
	schemas := ocsfSchemas(t)
	for _, f := range Formats {
		out, err := Render(f, &e)
		if err != nil || len(out) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		if f == FormatOCSF {
			validateOCSF(t, schemas, out)
		}
	}
}
