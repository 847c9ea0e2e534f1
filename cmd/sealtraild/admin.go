package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// apiError is a non-2xx answer of the operator API.
type apiError struct {
	status int
	msg    string
}

func (e apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.msg, e.status) }

const adminUsage = `usage: sealtraild admin [--server URL] [--token T] [--actor NAME] [--json] <command> [flags]

The operator API client. --server defaults to $SEALTRAIL_SERVER or http://127.0.0.1:8080;
--token to $SEALTRAIL_OPERATOR_TOKEN or the file data/operator.token.

commands:
  project create --name NAME            project list
  project rate-limit --project P --ingest N   (requests per 10 s per API key; 0: the default)
  project suspend --project P --reason TEXT    project unsuspend --project P
  key create --project P --scopes S[,S...] [--name N] [--expires RFC3339]
  key revoke --project P --key K        key list --project P
  member add --project P --email E --role owner|admin|member|auditor
  member remove --project P --email E   member list --project P
  signing-key add --project P --public-key HEX
  signing-key revoke --project P --key K    signing-key list --project P
  retention set --project P --days N [--stream events|project-audit]
  retention list --project P
  kek status                            kek rewrap   (KEK rotation: docs/keyring.md)
  retention clear --project P [--stream events|project-audit]   (keep forever again)
  retention minimum --project P [--days N]    (the operator's floor; 0: none; no --days shows it)
  hold create --project P --event ID [--event ID...] [--reason TEXT]
  hold release --project P --hold H     hold list --project P
  digest schedule --project P --schedule daily|weekly|off     digest show --project P
  digest opt-in --project P --email E   digest opt-out --project P --email E
  siem create --project P --name N --kind syslog|hec|webhook [--format ocsf|cef|json]
      [--stream events|project_audit] [--from start|now] [--address HOST:PORT] [--hostname H]
      [--url URL] [--token T] [--index I] [--source-type S] [--secret whsec_...]
      [--ca-cert FILE] [--server-name NAME]
  siem list --project P                 siem get --project P --destination D
  siem pause|resume|delete --project P --destination D   (resume also retries a dead letter)
  checkpoint-key show [--project P [--stream events|project-audit]]
  project public-read --project P --enabled true|false   (tlog-tiles path without API key, for mirrors)
`

type adminClient struct {
	server, token, actor string
	json                 bool
	out                  io.Writer
}

// adminCommand is one "<noun> <verb>": its flags and what it sends.
type adminCommand struct {
	flags func(fs *flag.FlagSet) func() (method, path string, body any, err error)
	print func(w io.Writer, resp map[string]any)
}

func admin(args []string, stdout, stderr io.Writer) error {
	gfs := flag.NewFlagSet("admin", flag.ContinueOnError)
	gfs.SetOutput(io.Discard)
	server := gfs.String("server", envOr("SEALTRAIL_SERVER", "http://127.0.0.1:8080"), "")
	token := gfs.String("token", os.Getenv("SEALTRAIL_OPERATOR_TOKEN"), "")
	actor := gfs.String("actor", os.Getenv("USER"), "")
	asJSON := gfs.Bool("json", false, "")
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, adminUsage)
			return nil
		}
		return usageError{err}
	}
	rest := gfs.Args()
	if len(rest) > 0 && rest[0] == "help" {
		fmt.Fprint(stdout, adminUsage)
		return nil
	}
	if len(rest) == 0 {
		return usageError{errors.New("admin: a command is required (sealtraild admin --help lists them)")}
	}
	if len(rest) < 2 {
		return usageError{fmt.Errorf("admin %s: a subcommand is required", rest[0])}
	}
	name := rest[0] + " " + rest[1]
	cmd, ok := adminCommands[name]
	if !ok {
		return usageError{fmt.Errorf("admin: unknown command %q", name)}
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	build := cmd.flags(fs)
	if err := fs.Parse(rest[2:]); err != nil {
		return usageError{fmt.Errorf("admin %s: %w", name, err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("admin %s: unexpected argument %q", name, fs.Arg(0))}
	}
	method, path, body, err := build()
	if err != nil {
		return usageError{fmt.Errorf("admin %s: %w", name, err)}
	}
	if *token == "" {
		data, err := os.ReadFile(filepath.Join("data", "operator.token"))
		if err != nil {
			return usageError{errors.New("admin: no operator token (--token, $SEALTRAIL_OPERATOR_TOKEN or data/operator.token)")}
		}
		*token = strings.TrimSpace(string(data))
	}
	c := adminClient{server: strings.TrimRight(*server, "/"), token: *token, actor: *actor, json: *asJSON, out: stdout}
	resp, err := c.do(method, path, body)
	if err != nil {
		return err
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	cmd.print(stdout, resp)
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (c adminClient) do(method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.server+"/admin/v1"+path, rd)
	if err != nil {
		return nil, usageError{fmt.Errorf("admin: --server: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	if c.actor != "" {
		req.Header.Set("X-Sealtrail-Actor", c.actor)
	}
	cl := &http.Client{Timeout: 60 * time.Second}
	res, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("admin: read response: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, apiError{res.StatusCode, "server answered with non-JSON: " + strings.TrimSpace(string(data))}
	}
	if res.StatusCode/100 != 2 {
		msg, _ := out["error"].(string)
		return nil, apiError{res.StatusCode, msg}
	}
	return out, nil
}

func need(vals map[string]*string) error {
	names := make([]string, 0, len(vals))
	for k, v := range vals {
		if *v == "" {
			names = append(names, "--"+k)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		return fmt.Errorf("%s required", strings.Join(names, ", "))
	}
	return nil
}

func esc(s string) string { return url.PathEscape(s) }

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func table(w io.Writer, rows []any, cols ...string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
	for _, r := range rows {
		m, _ := r.(map[string]any)
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = fmt.Sprint(orDash(m[c]))
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
	}
	tw.Flush()
}

func orDash(v any) any {
	switch x := v.(type) {
	case nil:
		return "-"
	case []any:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = fmt.Sprint(e)
		}
		return strings.Join(s, ",")
	}
	return v
}

func fields(w io.Writer, m map[string]any, keys ...string) {
	for _, k := range keys {
		fmt.Fprintf(w, "%-16s %v\n", k+":", orDash(m[k]))
	}
}

func listOf(key string, cols ...string) func(io.Writer, map[string]any) {
	return func(w io.Writer, m map[string]any) {
		rows, _ := m[key].([]any)
		table(w, rows, cols...)
	}
}

var adminCommands = map[string]adminCommand{
	"project create": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		name := fs.String("name", "", "")
		return func() (string, string, any, error) {
			return "POST", "/projects", map[string]string{"name": *name}, need(map[string]*string{"name": name})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "id", "name", "createdAt") }},
	"project list": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		return func() (string, string, any, error) { return "GET", "/projects", nil, nil }
	}, listOf("projects", "id", "name", "createdAt", "requireSigned", "ingestRateLimit")},
	"project rate-limit": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p := fs.String("project", "", "")
		n := fs.Int("ingest", 0, "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p}); err != nil {
				return "", "", nil, err
			}
			if !given(fs, "ingest") || *n < 0 {
				return "", "", nil, errors.New("--ingest N is required: requests per 10 s per API key (0: the service default)")
			}
			return "PUT", "/projects/" + esc(*p) + "/rate-limit", map[string]any{"ingestRateLimit": *n}, nil
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "id", "name", "ingestRateLimit") }},

	"key create": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, scopes, name, exp := fs.String("project", "", ""), fs.String("scopes", "", ""), fs.String("name", "", ""), fs.String("expires", "", "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p, "scopes": scopes}); err != nil {
				return "", "", nil, err
			}
			list := strings.Split(*scopes, ",")
			for i := range list {
				list[i] = strings.TrimSpace(list[i])
			}
			body := map[string]any{"scopes": list, "name": *name}
			if *exp != "" {
				if _, err := time.Parse(time.RFC3339, *exp); err != nil {
					return "", "", nil, fmt.Errorf("--expires %q is not an RFC 3339 time", *exp)
				}
				body["expiresAt"] = *exp
			}
			return "POST", "/projects/" + esc(*p) + "/keys", body, nil
		}
	}, func(w io.Writer, m map[string]any) {
		k, _ := m["key"].(map[string]any)
		fields(w, k, "id", "projectId", "scopes", "expiresAt")
		fmt.Fprintf(w, "%-16s %v\n(shown once: store it now)\n", "secret:", m["secret"])
	}},
	"key revoke": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, k := fs.String("project", "", ""), fs.String("key", "", "")
		return func() (string, string, any, error) {
			return "POST", "/projects/" + esc(*p) + "/keys/" + esc(*k) + "/revoke", nil, need(map[string]*string{"project": p, "key": k})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "id", "state", "revokedAt") }},
	"key list": {projectOnly("/keys"), listOf("keys", "id", "prefix", "scopes", "state", "expiresAt")},

	"member add": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, e, r := fs.String("project", "", ""), fs.String("email", "", ""), fs.String("role", "", "")
		return func() (string, string, any, error) {
			return "POST", "/projects/" + esc(*p) + "/members", map[string]string{"email": *e, "role": *r},
				need(map[string]*string{"project": p, "email": e, "role": r})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "email", "role", "createdAt") }},
	"member remove": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, e := fs.String("project", "", ""), fs.String("email", "", "")
		return func() (string, string, any, error) {
			return "DELETE", "/projects/" + esc(*p) + "/members/" + esc(*e), nil, need(map[string]*string{"project": p, "email": e})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "removed") }},
	"member list": {projectOnly("/members"), listOf("members", "email", "role", "createdAt")},

	"signing-key add": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, k := fs.String("project", "", ""), fs.String("public-key", "", "")
		return func() (string, string, any, error) {
			return "POST", "/projects/" + esc(*p) + "/signing-keys", map[string]string{"publicKey": *k},
				need(map[string]*string{"project": p, "public-key": k})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "id", "publicKey", "state") }},
	"signing-key revoke": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, k := fs.String("project", "", ""), fs.String("key", "", "")
		return func() (string, string, any, error) {
			return "POST", "/projects/" + esc(*p) + "/signing-keys/" + esc(*k) + "/revoke", nil, need(map[string]*string{"project": p, "key": k})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "id", "state", "revokedAt") }},
	"signing-key list": {projectOnly("/signing-keys"), listOf("signingKeys", "id", "publicKey", "state", "createdAt")},

	"retention set": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, stream := fs.String("project", "", ""), fs.String("stream", "events", "")
		days := fs.Int("days", 0, "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p}); err != nil {
				return "", "", nil, err
			}
			if !given(fs, "days") {
				return "", "", nil, errors.New("--days is required")
			}
			if *days < 1 {
				return "", "", nil, fmt.Errorf("--days %d: retention must be at least 1 day", *days)
			}
			return "PUT", "/projects/" + esc(*p) + "/retention", map[string]any{"stream": *stream, "days": *days}, nil
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "stream", "days", "updatedAt") }},
	"retention list": {projectOnly("/retention"), listOf("retention", "stream", "days", "updatedAt")},

	"hold create": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, reason := fs.String("project", "", ""), fs.String("reason", "", "")
		var events multi
		fs.Var(&events, "event", "")
		return func() (string, string, any, error) {
			if err := need(map[string]*string{"project": p}); err != nil {
				return "", "", nil, err
			}
			if len(events) == 0 {
				return "", "", nil, errors.New("at least one --event is required")
			}
			return "POST", "/projects/" + esc(*p) + "/holds", map[string]any{"eventIds": []string(events), "reason": *reason}, nil
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "holdId", "membershipRoot", "eventIds", "state") }},
	"hold release": {func(fs *flag.FlagSet) func() (string, string, any, error) {
		p, h := fs.String("project", "", ""), fs.String("hold", "", "")
		return func() (string, string, any, error) {
			return "POST", "/projects/" + esc(*p) + "/holds/" + esc(*h) + "/release", nil, need(map[string]*string{"project": p, "hold": h})
		}
	}, func(w io.Writer, m map[string]any) { fields(w, m, "holdId", "state", "releasedAt") }},
	"hold list": {projectOnly("/holds"), listOf("holds", "holdId", "state", "membershipRoot", "createdAt")},
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func projectOnly(suffix string) func(fs *flag.FlagSet) func() (string, string, any, error) {
	return func(fs *flag.FlagSet) func() (string, string, any, error) {
		p := fs.String("project", "", "")
		return func() (string, string, any, error) {
			return "GET", "/projects/" + esc(*p) + suffix, nil, need(map[string]*string{"project": p})
		}
	}
}
