package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

func init() {
	adminCommands["checkpoint-key show"] = adminCommand{
		flags: func(fs *flag.FlagSet) func() (string, string, any, error) {
			project := fs.String("project", "", "")
			stream := fs.String("stream", "", "")
			return func() (string, string, any, error) {
				q := url.Values{}
				if *project != "" {
					q.Set("projectId", *project)
					if *stream != "" {
						q.Set("stream", *stream)
					}
				}
				path := "/checkpoint-key"
				if len(q) > 0 {
					path += "?" + q.Encode()
				}
				return "GET", path, nil, nil
			}
		},
		print: func(w io.Writer, resp map[string]any) {
			if th, ok := resp["treeHeads"].(map[string]any); ok {
				fmt.Fprintf(w, "tree_heads origin:  %v\ntree_heads key:     %v\n", th["origin"], th["verifierKey"])
			}
			if st, ok := resp["stream"].(map[string]any); ok {
				fmt.Fprintf(w, "stream origin:      %v\nstream key:         %v\n", st["origin"], st["verifierKey"])
			}
			fmt.Fprintf(w, "service public key: %v\n", resp["servicePublicKey"])
		},
	}
}

func init() {
	adminCommands["project public-read"] = adminCommand{
		flags: func(fs *flag.FlagSet) func() (string, string, any, error) {
			project := fs.String("project", "", "")
			enabled := fs.String("enabled", "", "")
			return func() (string, string, any, error) {
				if err := need(map[string]*string{"project": project, "enabled": enabled}); err != nil {
					return "", "", nil, err
				}
				on, err := strconv.ParseBool(*enabled)
				if err != nil {
					return "", "", nil, fmt.Errorf("--enabled must be true or false, not %q", *enabled)
				}
				return "PUT", "/projects/" + url.PathEscape(*project) + "/public-read", map[string]bool{"publicRead": on}, nil
			}
		},
		print: func(w io.Writer, resp map[string]any) {
			fmt.Fprintf(w, "project %v: public read %v\n", resp["projectId"], resp["publicRead"])
		},
	}
}
