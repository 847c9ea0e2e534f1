package siem

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// The JSON Schema subset in testdata/ocsf is transcribed by hand; this test holds it to
// the OCSF definitions it came from, vendored in testdata/ocsf/definitions (the class,
// object and dictionary files of github.com/ocsf/ocsf-schema): the same required
// attributes, only attributes OCSF defines, at_least_one constraints, and the enums of
// the _id attributes. A schema that drifted from OCSF would fail here, not in a SIEM.

type ocsfDef struct {
	UID         int                        `json:"uid"`
	Extends     string                     `json:"extends"`
	Attributes  map[string]json.RawMessage `json:"attributes"`
	Constraints struct {
		AtLeastOne []string `json:"at_least_one"`
	} `json:"constraints"`
}

type ocsfAttr struct {
	Requirement string                     `json:"requirement"`
	Enum        map[string]json.RawMessage `json:"enum"`
}

var ocsfDefFiles = map[string]string{
	"base_event": "events/base_event.json", "application": "events/application/application.json",
	"api_activity": "events/application/api_activity.json", "iam": "events/iam/iam.json",
	"authentication": "events/iam/authentication.json",
}

func loadDef(t *testing.T, name string) ocsfDef {
	t.Helper()
	path, ok := ocsfDefFiles[name]
	if !ok {
		path = "objects/" + name + ".json"
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "ocsf", "definitions", path))
	if err != nil {
		t.Fatalf("definition %s: %v", name, err)
	}
	var d ocsfDef
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("definition %s: %v", name, err)
	}
	return d
}

// merged walks name's extends chain: its attributes (a child's settings override its
// parent's), and the nearest at_least_one constraint.
func merged(t *testing.T, name string) (map[string]ocsfAttr, []string, int) {
	t.Helper()
	var chain []ocsfDef
	for n := name; n != "" && n != "object"; {
		d := loadDef(t, n)
		chain = append(chain, d)
		n = d.Extends
	}
	attrs := map[string]ocsfAttr{}
	var atLeastOne []string
	for i := len(chain) - 1; i >= 0; i-- {
		for k, raw := range chain[i].Attributes {
			if k == "$include" {
				continue
			}
			var a ocsfAttr
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatalf("%s.%s: %v", name, k, err)
			}
			prev := attrs[k]
			if a.Requirement == "" {
				a.Requirement = prev.Requirement
			}
			if prev.Enum != nil {
				for v, e := range a.Enum {
					prev.Enum[v] = e
				}
				a.Enum = prev.Enum
			}
			attrs[k] = a
		}
		if c := chain[i].Constraints.AtLeastOne; c != nil {
			atLeastOne = c
		}
	}
	return attrs, atLeastOne, chain[0].UID
}

type jsonSchema struct {
	Properties map[string]struct {
		Const any   `json:"const"`
		Enum  []int `json:"enum"`
	} `json:"properties"`
	Required []string `json:"required"`
	AnyOf    []struct {
		Required []string `json:"required"`
	} `json:"anyOf"`
	Defs map[string]json.RawMessage `json:"$defs"`
}

func readSchema(t *testing.T, name string) jsonSchema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "ocsf", name+".schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

func required(attrs map[string]ocsfAttr) []string {
	var out []string
	for k, a := range attrs {
		if a.Requirement == "required" {
			out = append(out, k)
		}
	}
	return sorted(out)
}

func enumInts(t *testing.T, e map[string]json.RawMessage) []int {
	t.Helper()
	var out []int
	for k := range e {
		n, err := strconv.Atoi(k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// checkShape compares one schema (class or object) with its definition.
func checkShape(t *testing.T, what string, s jsonSchema, attrs map[string]ocsfAttr, atLeastOne []string) {
	t.Helper()
	if got, want := sorted(s.Required), required(attrs); !slices.Equal(got, want) {
		t.Errorf("%s: schema requires %v, OCSF requires %v", what, got, want)
	}
	for p := range s.Properties {
		if _, ok := attrs[p]; !ok {
			t.Errorf("%s: schema has %q, which OCSF does not define", what, p)
		}
	}
	for _, alt := range s.AnyOf {
		for _, m := range alt.Required {
			if !slices.Contains(atLeastOne, m) {
				t.Errorf("%s: anyOf names %q, not in OCSF's at_least_one %v", what, m, atLeastOne)
			}
		}
	}
	if len(atLeastOne) > 0 && len(s.AnyOf) == 0 {
		t.Errorf("%s: OCSF's at_least_one %v is missing from the schema", what, atLeastOne)
	}
}

func TestOCSFSchemaMatchesDefinitions(t *testing.T) {
	var dict struct {
		Attributes map[string]ocsfAttr `json:"attributes"`
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "ocsf", "definitions", "dictionary-subset.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dict); err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{"api_activity", "authentication"} {
		s := readSchema(t, class)
		attrs, atLeastOne, uid := merged(t, class)
		checkShape(t, class, s, attrs, atLeastOne)
		if c, ok := s.Properties["class_uid"].Const.(float64); !ok || int(c)%1000 != uid {
			t.Errorf("%s: class_uid %v does not end in the class uid %d", class, s.Properties["class_uid"].Const, uid)
		}
		if got, want := s.Properties["activity_id"].Enum, enumInts(t, attrs["activity_id"].Enum); !slices.Equal(got, want) {
			t.Errorf("%s: activity_id enum %v, OCSF %v", class, got, want)
		}
		for _, id := range []string{"severity_id", "status_id"} {
			// The dictionary's values plus those the class chain adds.
			all := map[string]json.RawMessage{}
			for _, e := range []map[string]json.RawMessage{dict.Attributes[id].Enum, attrs[id].Enum} {
				for k, v := range e {
					all[k] = v
				}
			}
			if got, want := s.Properties[id].Enum, enumInts(t, all); !slices.Equal(got, want) {
				t.Errorf("%s: %s enum %v, OCSF %v", class, id, got, want)
			}
		}
	}
	objects := readSchema(t, "objects")
	for name, raw := range objects.Defs {
		var s jsonSchema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		attrs, atLeastOne, _ := merged(t, name)
		checkShape(t, name, s, attrs, atLeastOne)
	}
}
