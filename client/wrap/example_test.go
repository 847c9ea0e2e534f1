package wrap_test

import (
	"context"
	"fmt"

	"github.com/sealtrail/sealtrail/client"
	"github.com/sealtrail/sealtrail/client/wrap"
)

// printer stands in for a *client.Client and prints what would be logged.
type printer struct{}

func (printer) Log(_ context.Context, ev client.EventInput) (*client.LogResult, error) {
	fmt.Printf("%s %s by %s:%s tool=%s call=%s status=%s\n", ev.Action, ev.Target.ID, ev.Actor.Type, ev.Actor.ID,
		ev.ToolName, ev.ToolCallID, ev.Status)
	return &client.LogResult{ID: "evt_example", Status: "sealed"}, nil
}

// Wrap a tool with an authorization check: a refused call is recorded as denied and
// returns a *wrap.DeniedError; an allowed call is recorded with its outcome.
func ExampleTool() {
	auditor, err := wrap.New(wrap.Options{Client: printer{}})
	if err != nil {
		panic(err)
	}
	deleteUser := wrap.Tool(auditor, wrap.ToolSpec{
		Name: "delete_user",
		Authorize: func(_ context.Context, call wrap.Call) (bool, error) {
			return call.Actor.ID == "admin-agent", nil
		},
	}, func(_ context.Context, userID string) (bool, error) { return true, nil })

	ctx := context.Background()
	_, err = deleteUser(ctx, wrap.Call{ID: "call_1", Actor: client.Entity{Type: "agent", ID: "intern-agent"}}, "u_9")
	fmt.Println(err)
	ok, err := deleteUser(ctx, wrap.Call{ID: "call_2", Actor: client.Entity{Type: "agent", ID: "admin-agent"}}, "u_9")
	fmt.Println(ok, err)
	// Output:
	// tool.call delete_user by agent:intern-agent tool=delete_user call=call_1 status=denied
	// tool delete_user denied by the authorization check
	// tool.call delete_user by agent:admin-agent tool=delete_user call=call_2 status=success
	// true <nil>
}

// Record a piece of application code with its outcome and duration.
func ExampleDo() {
	auditor, err := wrap.New(wrap.Options{Client: printer{}})
	if err != nil {
		panic(err)
	}
	err = wrap.Do(context.Background(), auditor, client.EventInput{
		Action: "invoice.send",
		Actor:  client.Entity{Type: "service", ID: "billing"},
		Target: &client.Entity{Type: "invoice", ID: "inv_1"},
	}, func(ctx context.Context) error {
		return nil // send the invoice
	})
	fmt.Println(err)
	// Output:
	// invoice.send inv_1 by service:billing tool= call= status=success
	// <nil>
}
