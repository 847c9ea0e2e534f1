package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigDashboard: the dashboard's settings come from the JSON file and the
// environment, have their documented defaults, and bad values stop the start.
func TestConfigDashboard(t *testing.T) {
	c := defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	if d := c.Dashboard; d.Disabled || d.PublicURL != "" || c.Mail.SMTPAddr != "" {
		t.Fatalf("defaults: %+v %+v", d, c.Mail)
	}

	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"dashboard":{"publicUrl":"https://audit.example.com"},"mail":{"smtpAddr":"mail.example.com:587"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c = defaultConfig()
	if err := c.load(path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SEALTRAIL_SMTP_USERNAME", "sealtrail")
	t.Setenv("SEALTRAIL_SMTP_PASSWORD_FILE", "/run/secrets/smtp")
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	// The mail sender defaults to an address at the public host.
	if d, m := c.Dashboard, c.Mail; d.PublicURL != "https://audit.example.com" || m.From != "sealtrail@audit.example.com" ||
		m.Username != "sealtrail" || m.PasswordFile != "/run/secrets/smtp" {
		t.Fatalf("from the file and the environment: %+v %+v", d, m)
	}

	for _, tc := range []struct{ env, value, want string }{
		{"SEALTRAIL_DASHBOARD_PUBLIC_URL", "ftp://x", "publicUrl"},
		{"SEALTRAIL_DASHBOARD_PUBLIC_URL", "https://audit.example.com/sub", "publicUrl"},
		{"SEALTRAIL_SMTP_ADDR", "mail.example.com", "smtpAddr"},
		{"SEALTRAIL_SMTP_FROM", "Sealtrail <a@b.c>", "mail.from"},
		{"SEALTRAIL_SMTP_PASSWORD_FILE", "", "go together"}, // the username is still set above
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			t.Setenv("SEALTRAIL_SMTP_ADDR", "127.0.0.1:1025")
			t.Setenv(tc.env, tc.value)
			c := defaultConfig()
			if err := c.load(""); err != nil {
				t.Fatal(err)
			}
			if err := c.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolve = %v, want an error naming %s", err, tc.want)
			}
		})
	}

	// A make run-style config: only the SMTP address set, no public URL.
	t.Setenv("SEALTRAIL_SMTP_USERNAME", "")
	t.Setenv("SEALTRAIL_SMTP_PASSWORD_FILE", "")
	t.Setenv("SEALTRAIL_SMTP_ADDR", "127.0.0.1:1025")
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil || c.Mail.From != "sealtrail@localhost" {
		t.Fatalf("only SEALTRAIL_SMTP_ADDR: %v, %+v", err, c.Mail)
	}

	t.Setenv("SEALTRAIL_DASHBOARD_DISABLED", "true")
	t.Setenv("SEALTRAIL_DASHBOARD_PUBLIC_URL", "ftp://x")
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil || !c.Dashboard.Disabled {
		t.Fatalf("disabled: %v, %+v", err, c.Dashboard)
	}
}

// TestPrintDashboard: make run's output says where the dashboard is and how to sign in.
func TestPrintDashboard(t *testing.T) {
	c := defaultConfig()
	c.Dashboard.PublicURL = "http://127.0.0.1:8080"
	var out strings.Builder
	printDashboard(&out, c)
	if s := out.String(); !strings.Contains(s, "Dashboard: http://127.0.0.1:8080/dashboard/") ||
		!strings.Contains(s, "operator token") || !strings.Contains(s, "SEALTRAIL_SMTP_ADDR") {
		t.Fatalf("without SMTP:\n%s", s)
	}
	c.Mail.SMTPAddr, c.Mail.From = "127.0.0.1:1025", "sealtrail@localhost"
	out.Reset()
	printDashboard(&out, c)
	if s := out.String(); !strings.Contains(s, "one-time sign-in link is sent from sealtrail@localhost through 127.0.0.1:1025") {
		t.Fatalf("with SMTP:\n%s", s)
	}
	c.Dashboard.Disabled = true
	out.Reset()
	printDashboard(&out, c)
	if out.Len() != 0 {
		t.Fatalf("disabled: %q", out.String())
	}
}
