package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/sealtrail/sealtrail/client"
	"github.com/sealtrail/sealtrail/client/wrap"
)

// The examples run against a real sealtraild that the package's TestMain starts; they
// read its address and keys from the environment, as an application would.

// Log an event and read it back.
func ExampleClient_Log() {
	ctx := context.Background()
	c, err := client.New(client.Config{
		APIKey:  os.Getenv("SEALTRAIL_API_KEY"), // a key with log:write (and log:verify for the checks)
		BaseURL: os.Getenv("SEALTRAIL_URL"),     // e.g. https://audit.example.com
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res, err := c.Log(ctx, client.EventInput{
		Action:   "user.login",
		Actor:    client.Entity{Type: "user", ID: "alice", Display: "Alice"},
		Target:   &client.Entity{Type: "app", ID: "console"},
		Metadata: map[string]any{"method": "password", "mfa": true},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", res.Status)

	page, err := c.Query(ctx, client.QueryInput{ActorID: "alice", Limit: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("newest:", page.Events[0].Action, page.Events[0].ID == res.ID)
	// Output:
	// status: sealed
	// newest: user.login true
}

// Sign events with a customer key: the service stores them only if the signature over
// the payload commitment verifies, and cannot forge them later.
func ExampleClient_Log_signed() {
	ctx := context.Background()
	c, err := client.New(client.Config{
		APIKey:            os.Getenv("SEALTRAIL_SIGNED_API_KEY"),
		BaseURL:           os.Getenv("SEALTRAIL_URL"),
		SigningKeyID:      os.Getenv("SEALTRAIL_SIGNING_KEY_ID"),      // the id the service gave the registered public key
		SigningPrivateKey: os.Getenv("SEALTRAIL_SIGNING_PRIVATE_KEY"), // hex; never sent anywhere
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res, err := c.Log(ctx, client.EventInput{
		Action: "payment.approve",
		Actor:  client.Entity{Type: "user", ID: "bob"},
		Target: &client.Entity{Type: "invoice", ID: "inv_42"},
		Risk:   client.RiskHigh,
	})
	if err != nil {
		log.Fatal(err)
	}
	// The id was minted and signed by the client.
	fmt.Println(res.Status, strings.HasPrefix(res.ID, "evt_"))

	page, err := c.Query(ctx, client.QueryInput{Limit: 1})
	if err != nil {
		log.Fatal(err)
	}
	ev := page.Events[0]
	fmt.Println("signed by:", *ev.SigningKeyID == os.Getenv("SEALTRAIL_SIGNING_KEY_ID"))
	// Output:
	// sealed true
	// signed by: true
}

// Check that the log only ever grew since the head this client pinned. Pins live in a
// directory, so a restarted process keeps checking against what it saw before.
func ExampleClient_CheckConsistency() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "pins")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := client.NewFileHeadStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(client.Config{
		APIKey:    os.Getenv("SEALTRAIL_API_KEY"),
		BaseURL:   os.Getenv("SEALTRAIL_URL"),
		HeadStore: store,
		OnTamper: func(e *client.TamperError) {
			log.Printf("ALERT: %s on stream %s", e.Reason, e.Stream) // page someone
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	first, err := c.CheckConsistency(ctx, client.StreamEvents) // trust on first use
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Log(ctx, client.EventInput{Action: "report.export", Actor: client.Entity{Type: "user", ID: "carol"}}); err != nil {
		log.Fatal(err)
	}
	next, err := c.CheckConsistency(ctx, client.StreamEvents) // proves next extends first
	var tamper *client.TamperError
	switch {
	case errors.As(err, &tamper):
		log.Fatalf("the service rewrote history: %v", tamper)
	case err != nil:
		log.Fatal(err) // network or HTTP failure: nothing pinned, try again later
	}
	fmt.Println("stream:", next.Stream)
	fmt.Println("grew:", next.TreeSize > first.TreeSize)
	// Output:
	// stream: events
	// grew: true
}

// Record every call of an agent's tool: who called it, with which call id, the outcome
// and the duration. Calls without a reason are refused and recorded as failed.
func Example_wrapTool() {
	ctx := context.Background()
	c, err := client.New(client.Config{APIKey: os.Getenv("SEALTRAIL_API_KEY"), BaseURL: os.Getenv("SEALTRAIL_URL")})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	auditor, err := wrap.New(wrap.Options{
		Client:       c,
		OnAuditError: func(err error, _ *client.EventInput) { log.Printf("audit: %v", err) },
	})
	if err != nil {
		log.Fatal(err)
	}

	refund := wrap.Tool(auditor, wrap.ToolSpec{Name: "issue_refund", Risk: client.RiskHigh, RequireReason: true},
		func(ctx context.Context, amountCents int) (string, error) {
			return fmt.Sprintf("refunded %d", amountCents), nil
		})

	agent := client.Entity{Type: "agent", ID: "support-bot"}
	out, err := refund(ctx, wrap.Call{ID: "call_1", Actor: agent, Model: "gpt-x", Reason: "duplicate charge"}, 1299)
	fmt.Println(out, err)

	_, err = refund(ctx, wrap.Call{ID: "call_2", Actor: agent}, 5000)
	var noReason *wrap.ReasonRequiredError
	fmt.Println(errors.As(err, &noReason), noReason.ToolName)

	page, err := c.Query(ctx, client.QueryInput{ActorID: "support-bot", Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range page.Events {
		fmt.Println(ev.ToolCallID, ev.ToolName, ev.Status)
	}
	// Output:
	// refunded 1299 <nil>
	// true issue_refund
	// call_2 issue_refund failed
	// call_1 issue_refund success
}
