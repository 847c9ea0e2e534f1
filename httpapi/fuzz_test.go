package httpapi

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/sealtrail/sealtrail/tlog"
)

// FuzzIngestDecoder runs the ingest decoder on any body: canonicalization with the
// ingest limits (as readBody does), then parseEvent. It must never panic; a rejection
// is a *CanonError or field errors; an accepted event has the required members, no
// U+0000 in its schema strings, and a payload that is canonical JSON holding exactly
// the payload members of the body.
func FuzzIngestDecoder(f *testing.F) {
	for _, s := range []string{
		`{"action":"user.login","actor":{"type":"user","id":"u_1"}}`,
		`{"action":"document.export","actor":{"type":"user","id":"usr_8f2c41","display":"Ada"},"status":"success",` +
			`"target":{"type":"document","id":"doc_77a1"},"risk":"medium","requestId":"req_1","userAgent":"ua",` +
			`"context":{"tenant":"acme","flags":["a","b"]},"metadata":{"pages":42,"note":"\u00e9\ud83d\ude02"}}`,
		`{"id":"evt_client_1","nonce":"` + strings.Repeat("ab", 32) + `","signingKeyId":"sk_1","signature":"` +
			strings.Repeat("cd", 64) + `","action":"a","actor":{"type":"u","id":"1"}}`,
		`{"action":"a\u0000","actor":{"type":"u","id":"1"}}`,
		`{"action":"a","actor":{"type":"u","id":"1"},"metadata":{"\u0000":"\u0000"}}`,
		`{"action":"a","actor":{"type":"u","id":"1"},"metadata":{"n":9007199254740993.0}}`,
		`{"action":"a","actor":{"type":"u","id":"1"},"metadata":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 41),
		`{"action":null,"actor":{"type":"u","id":"1","extra":1},"status":"bogus","unknown":true}`,
		`{"action":"a","actor":{"type":"u","id":"1"},"action":"b"}`,
		`[1,2,3]`, `[]`, `[{"a":[1,"]"]},"x",[]]`, `"x"`, ``, `{`, `null`, `{"a":{}}`, `{"a":[{"b":"\\"}],"c":"\"}"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		canon, err := tlog.CanonicalizeLimited(body, ingestLimits)
		if err != nil {
			var ce *tlog.CanonError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *tlog.CanonError", err)
			}
			return
		}
		// canonObject splits exactly as encoding/json decodes, in key order.
		var want map[string]json.RawMessage
		isObject := json.Unmarshal(canon, &want) == nil && want != nil
		split, ok := canonObject(canon, 0)
		if ok != isObject || len(split) != len(want) {
			t.Fatalf("canonObject(%q) = %d members, %v; encoding/json: %d, %v", canon, len(split), ok, len(want), isObject)
		}
		for i, m := range split {
			if v, found := want[m.k]; !found || string(m.v) != string(v) {
				t.Fatalf("canonObject(%q)[%q] = %q, encoding/json: %q", canon, m.k, m.v, v)
			}
			if i > 0 && slices.Compare(utf16.Encode([]rune(split[i-1].k)), utf16.Encode([]rune(m.k))) >= 0 {
				t.Fatalf("canonObject(%q): %q after %q", canon, m.k, split[i-1].k)
			}
		}
		var wantElems []json.RawMessage
		isArray := json.Unmarshal(canon, &wantElems) == nil && wantElems != nil
		elems, ok := canonElements(canon)
		if ok != isArray || len(elems) != len(wantElems) {
			t.Fatalf("canonElements(%q) = %d elements, %v; encoding/json: %d, %v", canon, len(elems), ok, len(wantElems), isArray)
		}
		for i := range wantElems {
			if string(elems[i]) != string(wantElems[i]) {
				t.Fatalf("canonElements(%q)[%d] = %q, encoding/json: %q", canon, i, elems[i], wantElems[i])
			}
		}
		in, errs := parseEvent(canon)
		if errs != nil {
			if in != nil || len(errs) == 0 {
				t.Fatalf("parseEvent returned %v and errors %v", in, errs)
			}
			return
		}
		if in.action == "" || in.actor.Type == "" || in.actor.ID == "" {
			t.Fatalf("accepted %q without action or actor: %+v", body, in)
		}
		for _, s := range []string{in.action, in.status, in.actor.Type, in.actor.ID, in.actor.Display, in.id, in.nonce, in.signingKeyID, in.signature} {
			if strings.ContainsRune(s, 0) {
				t.Fatalf("accepted U+0000 in a schema string of %q", body)
			}
		}
		payload := in.payload()
		again, err := tlog.Canonicalize(payload)
		if err != nil || string(again) != string(payload) {
			t.Fatalf("payload %q is not canonical: %v", payload, err)
		}
		var all, got map[string]json.RawMessage
		if err := json.Unmarshal(canon, &all); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(payload, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range all {
			if tlog.IsPayloadMember(k) && string(got[k]) != string(v) {
				t.Fatalf("payload member %s is %s, body had %s", k, got[k], v)
			}
		}
		for k := range got {
			if !tlog.IsPayloadMember(k) {
				t.Fatalf("payload has %s, which is not a payload member", k)
			}
		}
	})
}
