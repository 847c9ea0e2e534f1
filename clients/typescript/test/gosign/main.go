// Command gosign is the Go side of the TypeScript client's cross-check: it logs events
// signed by the Go client, and verifies with the Go client and package tlog the events a
// project holds (among them events signed by the TypeScript client). The TypeScript
// suite builds and runs it against the real sealtraild it starts; it is not installed.
//
// Usage (the service and keys come from SEALTRAIL_URL, SEALTRAIL_API_KEY,
// SEALTRAIL_SIGNING_KEY_ID and SEALTRAIL_SIGNING_PRIVATE_KEY):
//
//	gosign log <n> <action>        log n signed events; print their ids as a JSON array
//	gosign verify <publicKeyHex>   prove every event of the events stream and check
//	                               every customer signature; print {"events","signed"}
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sealtrail/sealtrail/client"
	"github.com/sealtrail/sealtrail/tlog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gosign:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	off := false
	c, err := client.New(client.Config{
		APIKey:            os.Getenv("SEALTRAIL_API_KEY"),
		BaseURL:           os.Getenv("SEALTRAIL_URL"),
		SigningKeyID:      os.Getenv("SEALTRAIL_SIGNING_KEY_ID"),
		SigningPrivateKey: os.Getenv("SEALTRAIL_SIGNING_PRIVATE_KEY"),
		AutoVerify:        &off,
	})
	if err != nil {
		return err
	}
	defer c.Close()
	switch {
	case len(args) == 3 && args[0] == "log":
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 {
			return fmt.Errorf("log: count %q is not a positive integer", args[1])
		}
		return logEvents(ctx, c, n, args[2])
	case len(args) == 2 && args[0] == "verify":
		pub, err := tlog.ParsePublicKey(args[1])
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		return verifyAll(ctx, c, pub)
	}
	return fmt.Errorf("usage: gosign log <n> <action> | gosign verify <publicKeyHex>")
}

func logEvents(ctx context.Context, c *client.Client, n int, action string) error {
	ids := make([]string, 0, n)
	for i := range n {
		res, err := c.Log(ctx, client.EventInput{
			Action:   action,
			Actor:    client.Entity{Type: "service", ID: "go-client"},
			Metadata: map[string]any{"i": i, "lang": "go", "note": "é😂"},
		})
		if err != nil {
			return fmt.Errorf("log: %w", err)
		}
		ids = append(ids, res.ID)
	}
	return json.NewEncoder(os.Stdout).Encode(ids)
}

func verifyAll(ctx context.Context, c *client.Client, pub []byte) error {
	var events, signed int
	cursor := ""
	for {
		page, err := c.Query(ctx, client.QueryInput{Limit: 500, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		for i := range page.Events {
			ev := &page.Events[i]
			if _, err := c.VerifyEvent(ctx, ev); err != nil {
				return fmt.Errorf("event %s: %w", ev.ID, err)
			}
			events++
			if ev.ClientSignature == nil {
				continue
			}
			ph, err := tlog.ParseHash(ev.PayloadHash)
			if err != nil {
				return fmt.Errorf("event %s: %w", ev.ID, err)
			}
			if err := tlog.VerifyEventSignature(pub, ev.ID, ph, *ev.ClientSignature); err != nil {
				return fmt.Errorf("event %s: customer signature: %w", ev.ID, err)
			}
			signed++
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]int{"events": events, "signed": signed})
}
