package httpapi

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestOpenAPICoversRouter checks that every route the router serves is documented in
// openapi.json with its method, and that the document names no route that does not
// exist.
func TestOpenAPICoversRouter(t *testing.T) {
	_, key, _ := tlog.GenerateKey()
	s, err := New(Config{Control: control.New(nil, nil, nil), Sequencer: nopSequencer{}, Catalog: nopCatalog{},
		Key: key, Store: mem.New(), OperatorToken: "sto_test_operator_token"})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	err = s.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil {
			return nil // a subrouter prefix
		}
		tpl = strings.ReplaceAll(tpl, "{path:tile/.+}", "tile/{tilePath}")
		for _, m := range methods {
			served[strings.ToLower(m)+" "+tpl] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for m := range ops {
			documented[m+" "+path] = true
		}
	}
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("openapi.json documents routes the router does not serve: %v", extra)
	}
	if len(served) < 25 {
		t.Errorf("only %d routes found; the walk is broken", len(served))
	}
}
