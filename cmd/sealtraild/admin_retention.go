package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Operator commands of retention and billing suspension (docs/retention.md).
func init() {
	adminCommands["retention clear"] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, stream := fs.String("project", "", ""), fs.String("stream", "events", "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p, "stream": stream}); err != nil {
				return "", "", nil, err
			}
			return "DELETE", "/projects/" + esc(*p) + "/retention/" + esc(*stream), nil, nil
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "stream", "days") }}
	adminCommands["retention minimum"] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
		p := fs.String("project", "", "")
		days := fs.Int("days", 0, "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p}); err != nil {
				return "", "", nil, err
			}
			if !given(fs, "days") {
				return "GET", "/projects/" + esc(*p) + "/retention-minimum", nil, nil
			}
			if *days < 0 {
				return "", "", nil, fmt.Errorf("--days %d: the minimum is 0 (none) or more days", *days)
			}
			return "PUT", "/projects/" + esc(*p) + "/retention-minimum", map[string]any{"days": *days}, nil
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "minimumDays") }}
	adminCommands["project suspend"] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, reason := fs.String("project", "", ""), fs.String("reason", "", "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p}); err != nil {
				return "", "", nil, err
			}
			if *reason == "" {
				return "", "", nil, errors.New("--reason is required (it is sent to the project's clients with each 429)")
			}
			return "PUT", "/projects/" + esc(*p) + "/suspension", map[string]any{"reason": *reason}, nil
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "projectId", "reason", "since") }}
	adminCommands["project unsuspend"] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
		p := fs.String("project", "", "")
		return func() (string, string, any, error) {
			return "DELETE", "/projects/" + esc(*p) + "/suspension", nil, need(map[string]*string{"project": p})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "projectId", "suspended") }}
}
