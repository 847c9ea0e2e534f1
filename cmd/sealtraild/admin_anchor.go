package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
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
