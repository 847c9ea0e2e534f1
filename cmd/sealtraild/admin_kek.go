package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
)

// The operator commands of KEK rotation (docs/keyring.md, "KEK rotation"):
//
//	kek status    the current and previous KEKs, live data keys and sealed SIEM secrets
//	              per KEK, this replica's run
//	kek rewrap    start rewrapping every data key under the current KEK (idempotent)
func init() {
	noFlags := func(method, path string) func(fs *flag.FlagSet) func() (string, string, any, error) {
		return func(*flag.FlagSet) func() (string, string, any, error) {
			return func() (string, string, any, error) { return method, path, nil, nil }
		}
	}
	adminCommands["kek status"] = adminCommand{noFlags("GET", "/kek"), printKEKStatus}
	adminCommands["kek rewrap"] = adminCommand{noFlags("POST", "/kek/rewrap"), printKEKStatus}
}

func printKEKStatus(w io.Writer, m map[string]any) {
	if started, ok := m["started"].(bool); ok {
		if started {
			fmt.Fprintln(w, "rewrap started")
		} else {
			fmt.Fprintln(w, "a rewrap is already running on this replica")
		}
	}
	if prev, _ := m["previousKeks"].([]any); len(prev) == 0 {
		m["previousKeks"] = nil // printed as "-"
	}
	fields(w, m, "currentKek", "previousKeks", "remaining", "running", "startedAt", "finishedAt", "error")
	if last, ok := m["last"].(map[string]any); ok {
		fmt.Fprintf(w, "%-16s rewrapped %v, skipped %v\n", "last run:", orDash(last["rewrapped"]), orDash(last["skipped"]))
	}
	keys, _ := m["keys"].(map[string]any)
	secrets, _ := m["secrets"].(map[string]any)
	var ids []string
	for _, byKEK := range []map[string]any{keys, secrets} {
		for id := range byKEK {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	count := func(n any) any {
		if n == nil {
			return 0
		}
		return n
	}
	rows := make([]any, len(ids))
	for i, id := range ids {
		rows[i] = map[string]any{"kek": id, "liveDataKeys": count(keys[id]), "sealedSecrets": count(secrets[id])}
	}
	table(w, rows, "kek", "liveDataKeys", "sealedSecrets")
}
