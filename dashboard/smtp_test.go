package dashboard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/dashboard"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestSMTPSender sends through mailpit and refuses what would inject headers.
func TestSMTPSender(t *testing.T) {
	mp := testenv.StartMailpit(t)
	m := &dashboard.SMTPSender{Addr: mp.SMTPAddr, From: "sealtrail@example.com"}
	ctx := context.Background()
	body := "Line one, ünïcödé, and a long line " + strings.Repeat("x", 120) + "\nline two\n"
	if err := m.Send(ctx, "al@example.com", "Sign in: ✓", body); err != nil {
		t.Fatal(err)
	}
	text, err := mp.LatestText(ctx, "al@example.com")
	if err != nil || strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n") != strings.TrimRight(body, "\n") {
		t.Fatalf("received %q, %v; sent %q", text, err, body)
	}
	for _, tc := range []struct{ to, subject string }{
		{"al@example.com\r\nBcc: eve@example.com", "hi"},
		{"Al <al@example.com>", "hi"},
		{"al@example.com", "hi\r\nBcc: eve@example.com"},
	} {
		if err := m.Send(ctx, tc.to, tc.subject, "x"); err == nil {
			t.Errorf("Send(%q, %q) succeeded", tc.to, tc.subject)
		}
	}
	if err := (&dashboard.SMTPSender{Addr: "no-port", From: "sealtrail@example.com"}).Send(ctx, "al@example.com", "hi", "x"); err == nil {
		t.Error("an address without a port worked")
	}
}
