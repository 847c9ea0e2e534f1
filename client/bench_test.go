package client

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLog measures Log against an in-process service with opportunistic checks
// off, on at the default interval, and on at every call against a /root that takes
// 5 ms to answer. Checks run off the caller's path, so the three should cost the same
// per Log; checks/op reports how many checks actually ran.
func BenchmarkLog(b *testing.B) {
	for _, bc := range []struct {
		name      string
		auto      bool
		interval  time.Duration
		rootDelay time.Duration
	}{
		{"autoVerify=off", false, 0, 0},
		{"autoVerify=on/interval=60s", true, DefaultAutoVerifyInterval, 0},
		{"autoVerify=on/interval=0/slowRoot=5ms", true, time.Nanosecond, 5 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFakeLog(b)
			f.rootDelay = bc.rootDelay
			c := newTestClient(b, f, Config{AutoVerify: boolPtr(bc.auto), AutoVerifyInterval: bc.interval})
			ctx := context.Background()
			ev := EventInput{Action: "user.login", Actor: Entity{Type: "user", ID: "alice"},
				Metadata: map[string]any{"attempt": 1, "method": "password"}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Log(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.Wait()
			b.ReportMetric(float64(f.rootHits.Load())/float64(b.N), "checks/op")
		})
	}
}

// BenchmarkLogSigned measures the cost signing adds to Log.
func BenchmarkLogSigned(b *testing.B) {
	f := newFakeLog(b)
	c := newTestClient(b, f, Config{SigningKeyID: "sk_1",
		SigningPrivateKey: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"})
	ctx := context.Background()
	ev := EventInput{Action: "user.login", Actor: Entity{Type: "user", ID: "alice"},
		Metadata: map[string]any{"attempt": 1, "method": "password"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Log(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}
