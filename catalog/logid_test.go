package catalog

import (
	"errors"
	"strings"
	"testing"
)

func TestValidProjectID(t *testing.T) {
	for _, id := range []string{"prj_a", "prj_0123456789abcdefghjkmnpqrs", "prj_01JDVECTOR", "prj_kek_c", "prj_a-b", "prj_" + strings.Repeat("x", 124)} {
		if !ValidProjectID(id) {
			t.Errorf("ValidProjectID(%q) = false", id)
		}
		if err := (LogID{ProjectID: id, Stream: StreamEvents}).Validate(); err != nil {
			t.Errorf("LogID{%q}.Validate: %v", id, err)
		}
	}
	for _, id := range []string{"", "prj_", "p1", "PRJ_a", "prj_a/b", "prj_..", "prj_a.b", "prj_a b", "prj_a\n", "prj_\x00", "prj_é", "../prj_a", "prj_" + strings.Repeat("x", 125)} {
		if ValidProjectID(id) {
			t.Errorf("ValidProjectID(%q) = true", id)
		}
		if err := (LogID{ProjectID: id, Stream: StreamEvents}).Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("LogID{%q}.Validate = %v, want ErrInvalid", id, err)
		}
		if err := (&Project{ID: id}).Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Project{%q}.Validate = %v, want ErrInvalid", id, err)
		}
	}
}
