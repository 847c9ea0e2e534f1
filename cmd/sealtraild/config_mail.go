package main

import (
	"fmt"
	"net"
	"net/mail"
	"os"
	"strconv"
)

// MailConfig is the email configuration, the "mail" object of the config file
// (docs/digests.md). Without smtpAddr, mail (sign-in links, digests) is queued in the
// catalog but neither sent nor are digests built; once it is set, the queue is
// delivered.
type MailConfig struct {
	// SMTPAddr is the mail server, host:port (SEALTRAIL_SMTP_ADDR).
	SMTPAddr string `json:"smtpAddr"`
	// From is the sender address (SEALTRAIL_SMTP_FROM); default sealtrail@<host of
	// dashboard.publicUrl>, sealtrail@localhost without one (docs/digests.md).
	From string `json:"from"`
	// Username turns on SMTP AUTH PLAIN, with the password read from PasswordFile
	// (mode 0600) (SEALTRAIL_SMTP_USERNAME, SEALTRAIL_SMTP_PASSWORD_FILE).
	Username     string `json:"username"`
	PasswordFile string `json:"passwordFile"`
	// TLS is starttls (the default; required), tls (implicit, port 465) or none (a
	// local relay only; AUTH is then refused) (SEALTRAIL_SMTP_TLS).
	TLS string `json:"tls"`
	// CAFile is a PEM file of roots to trust for the server's certificate instead of
	// the system's (SEALTRAIL_SMTP_CA_FILE).
	CAFile string `json:"caFile"`
	// DigestIntervalMS is how often due digests are looked for (default 60000), and
	// PollMS how often the queue is (default 5000) (SEALTRAIL_DIGEST_INTERVAL_MS,
	// SEALTRAIL_MAIL_POLL_MS).
	DigestIntervalMS int `json:"digestIntervalMs"`
	PollMS           int `json:"pollMs"`
}

// resolve applies the SEALTRAIL_SMTP_* environment and checks the configuration;
// without a sender, From becomes sealtrail@defaultHost.
func (m *MailConfig) resolve(defaultHost string) error {
	for env, dst := range map[string]*string{"SEALTRAIL_SMTP_ADDR": &m.SMTPAddr, "SEALTRAIL_SMTP_FROM": &m.From,
		"SEALTRAIL_SMTP_USERNAME": &m.Username, "SEALTRAIL_SMTP_PASSWORD_FILE": &m.PasswordFile,
		"SEALTRAIL_SMTP_TLS": &m.TLS, "SEALTRAIL_SMTP_CA_FILE": &m.CAFile} {
		if v, ok := os.LookupEnv(env); ok {
			*dst = v
		}
	}
	for env, dst := range map[string]*int{"SEALTRAIL_DIGEST_INTERVAL_MS": &m.DigestIntervalMS, "SEALTRAIL_MAIL_POLL_MS": &m.PollMS} {
		if v, ok := os.LookupEnv(env); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("config: %s=%q is not an integer", env, v)
			}
			*dst = n
		}
	}
	if m.DigestIntervalMS == 0 {
		m.DigestIntervalMS = 60_000
	}
	if m.PollMS == 0 {
		m.PollMS = 5_000
	}
	if m.DigestIntervalMS < 0 || m.PollMS < 0 {
		return fmt.Errorf("config: mail.digestIntervalMs and mail.pollMs must be positive")
	}
	switch m.TLS {
	case "":
		m.TLS = "starttls"
	case "starttls", "tls", "none":
	default:
		return fmt.Errorf("config: mail.tls %q must be starttls, tls or none", m.TLS)
	}
	if m.SMTPAddr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(m.SMTPAddr); err != nil {
		return fmt.Errorf("config: mail.smtpAddr %q must be host:port", m.SMTPAddr)
	}
	if m.From == "" && defaultHost != "" {
		m.From = "sealtrail@" + defaultHost
	}
	if a, err := mail.ParseAddress(m.From); err != nil || a.Address != m.From {
		return fmt.Errorf("config: mail.from %q must be a plain address (name@example.com)", m.From)
	}
	if (m.Username == "") != (m.PasswordFile == "") {
		return fmt.Errorf("config: mail.username and mail.passwordFile go together")
	}
	return nil
}
