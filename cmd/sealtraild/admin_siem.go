package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// The SIEM destination commands of sealtraild admin (docs/siem.md).
func init() {
	dest := func(verb string) func(fs *flag.FlagSet) func() (string, string, any, error) {
		return func(fs *flag.FlagSet) func() (string, string, any, error) {
			p, d := fs.String("project", "", ""), fs.String("destination", "", "")
			return func() (string, string, any, error) {
				method, path := "POST", "/projects/"+esc(*p)+"/siem-destinations/"+esc(*d)
				switch verb {
				case "get":
					method = "GET"
				case "delete":
					method = "DELETE"
				default:
					path += "/" + verb
				}
				return method, path, nil, need(map[string]*string{"project": p, "destination": d})
			}
		}
	}
	show := func(w io.Writer, m map[string]any) {
		fields(w, m, "id", "name", "kind", "format", "stream", "state", "cursor", "attempts", "lastError", "failedAt", "leaseOwner")
	}
	adminCommands["siem create"] = adminCommand{func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, name, kind := fs.String("project", "", ""), fs.String("name", "", ""), fs.String("kind", "", "")
		format, stream, from := fs.String("format", "", ""), fs.String("stream", "", ""), fs.String("from", "", "")
		settings := map[string]*string{}
		for flagName, member := range map[string]string{"address": "address", "hostname": "hostname", "url": "url",
			"token": "token", "index": "index", "source-type": "sourceType", "secret": "secret", "server-name": "serverName"} {
			settings[member] = fs.String(flagName, "", "")
		}
		caFile := fs.String("ca-cert", "", "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p, "name": name, "kind": kind}); err != nil {
				return "", "", nil, err
			}
			s := map[string]string{}
			for member, v := range settings {
				if *v != "" {
					s[member] = *v
				}
			}
			if *caFile != "" {
				pem, err := os.ReadFile(*caFile)
				if err != nil {
					return "", "", nil, fmt.Errorf("--ca-cert: %w", err)
				}
				s["caCert"] = string(pem)
			}
			body := map[string]any{"name": *name, "kind": *kind, "settings": s}
			for k, v := range map[string]string{"format": *format, "stream": *stream, "from": *from} {
				if v != "" {
					body[k] = v
				}
			}
			return "POST", "/projects/" + esc(*p) + "/siem-destinations", body, nil
		}
	}, func(w io.Writer, m map[string]any) {
		d, _ := m["destination"].(map[string]any)
		show(w, d)
		if s, ok := m["secret"]; ok {
			fmt.Fprintf(w, "%-16s %v\n(the webhook signing secret, shown once: store it now)\n", "secret:", s)
		}
	}}
	adminCommands["siem list"] = adminCommand{projectOnly("/siem-destinations"),
		listOf("destinations", "id", "name", "kind", "format", "state", "cursor", "attempts", "lastError")}
	adminCommands["siem get"] = adminCommand{dest("get"), show}
	adminCommands["siem pause"] = adminCommand{dest("pause"), show}
	adminCommands["siem resume"] = adminCommand{dest("resume"), show}
	adminCommands["siem delete"] = adminCommand{dest("delete"), func(w io.Writer, m map[string]any) { fields(w, m, "deleted") }}
}
