package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigMail: the mail settings come from the config file and the environment,
// have their defaults, and bad ones stop the start with a message naming them.
func TestConfigMail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"mail":{"smtpAddr":"smtp.example.com:587","from":"a@example.com"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SEALTRAIL_SMTP_USERNAME", "user")
	t.Setenv("SEALTRAIL_SMTP_PASSWORD_FILE", "/run/secrets/smtp")
	t.Setenv("SEALTRAIL_DIGEST_INTERVAL_MS", "1000")
	c := defaultConfig()
	if err := c.load(path); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	m := c.Mail
	if m.SMTPAddr != "smtp.example.com:587" || m.Username != "user" || m.PasswordFile != "/run/secrets/smtp" ||
		m.DigestIntervalMS != 1000 || m.PollMS != 5000 || m.TLS != "starttls" {
		t.Fatalf("mail config = %+v", m)
	}

	for _, tc := range []struct {
		name string
		mail MailConfig
		want string
	}{
		{"address without port", MailConfig{SMTPAddr: "smtp.example.com", From: "a@example.com"}, "mail.smtpAddr"},
		{"no sender and no default", MailConfig{SMTPAddr: "smtp.example.com:25"}, "mail.from"},
		{"a named sender", MailConfig{SMTPAddr: "smtp.example.com:25", From: "Sealtrail <a@example.com>"}, "mail.from"},
		{"user without password", MailConfig{SMTPAddr: "smtp.example.com:25", From: "a@example.com", Username: "u"}, "mail.passwordFile"},
		{"unknown TLS mode", MailConfig{SMTPAddr: "smtp.example.com:25", From: "a@example.com", TLS: "ssl"}, "mail.tls"},
		{"negative interval", MailConfig{DigestIntervalMS: -1}, "mail.digestIntervalMs"},
	} {
		t.Setenv("SEALTRAIL_SMTP_USERNAME", tc.mail.Username)
		t.Setenv("SEALTRAIL_SMTP_PASSWORD_FILE", tc.mail.PasswordFile)
		t.Setenv("SEALTRAIL_DIGEST_INTERVAL_MS", "0")
		if tc.mail.DigestIntervalMS != 0 {
			t.Setenv("SEALTRAIL_DIGEST_INTERVAL_MS", "-1")
		}
		m := tc.mail
		if err := m.resolve(""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.want)
		}
	}
}
