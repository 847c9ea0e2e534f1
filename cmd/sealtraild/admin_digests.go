package main

import (
	"flag"
	"fmt"
	"io"
)

// The digest commands of sealtraild admin (docs/digests.md).
func init() {
	show := func(w io.Writer, m map[string]any) {
		fields(w, m, "schedule", "lastPeriod", "lastDigestAt", "recipients")
	}
	adminCommands["digest show"] = adminCommand{projectOnly("/digests"), show}
	adminCommands["digest schedule"] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, schedule := fs.String("project", "", ""), fs.String("schedule", "", "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p, "schedule": schedule}); err != nil {
				return "", "", nil, err
			}
			switch *schedule {
			case "daily", "weekly", "off":
			default:
				return "", "", nil, fmt.Errorf("--schedule %q must be daily, weekly or off", *schedule)
			}
			return "PUT", "/projects/" + esc(*p) + "/digests", map[string]any{"schedule": *schedule}, nil
		}
	}, show}
	for verb, in := range map[string]bool{"opt-in": true, "opt-out": false} {
		adminCommands["digest "+verb] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
			p, email := fs.String("project", "", ""), fs.String("email", "", "")
			return func() (string, string, any, error) {
				if err := need(map[string]*string{"project": p, "email": email}); err != nil {
					return "", "", nil, err
				}
				return "PUT", "/projects/" + esc(*p) + "/digests/members/" + esc(*email), map[string]any{"optIn": in}, nil
			}
		}, show}
	}
}
