package tiles_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDependencies enforces the map of docs: tiles depends on tlog and the field's
// packages only, never on the packages that use it; only storeurl links the drivers.
func TestDependencies(t *testing.T) {
	const mod = "github.com/sealtrail/sealtrail/"
	forbidden := map[string][]string{
		".":         {"catalog", "sequencer", "httpapi", "anchor", "client", "cmd", "integration", "tiles/fs", "tiles/s3", "tiles/gcs", "tiles/mem", "tiles/storeurl", "tiles/storetest"},
		"fs":        {"catalog", "sequencer", "httpapi", "tiles/s3", "tiles/gcs"},
		"mem":       {"catalog", "sequencer", "httpapi", "tiles/s3", "tiles/gcs"},
		"s3":        {"catalog", "sequencer", "httpapi", "tiles/gcs"},
		"gcs":       {"catalog", "sequencer", "httpapi", "tiles/s3"},
		"storetest": {"catalog", "sequencer", "httpapi", "tiles/s3", "tiles/gcs", "tiles/fs"},
		"storeurl":  {"catalog", "sequencer", "httpapi"},
	}
	for dir, bad := range forbidden {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range bad {
					if path == mod+b || strings.HasPrefix(path, mod+b+"/") {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
		}
	}
}
