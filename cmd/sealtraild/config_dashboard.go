package main

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
)

// DashboardConfig configures the web dashboard at /dashboard/ (package dashboard) and
// the SMTP server its sign-in links are sent through. In the JSON config it is the
// "dashboard" object; the environment variables named below override it.
type DashboardConfig struct {
	// Disabled turns the dashboard off (SEALTRAIL_DASHBOARD_DISABLED=true).
	Disabled bool `json:"disabled"`
	// PublicURL is the service's address as browsers reach it, the base of emailed
	// sign-in links (default http://<listen address>); https makes the session cookie
	// Secure. SEALTRAIL_DASHBOARD_PUBLIC_URL.
	PublicURL string `json:"publicUrl"`
	// SMTPAddr (host:port) is the SMTP server sign-in links go through; without it
	// only operators can sign in. SEALTRAIL_SMTP_ADDR.
	SMTPAddr string `json:"smtpAddr"`
	// SMTPFrom is the sender address (default sealtrail@<public URL host>).
	// SEALTRAIL_SMTP_FROM.
	SMTPFrom string `json:"smtpFrom"`
	// SMTPUsername and SMTPPasswordFile authenticate to the SMTP server (PLAIN, only
	// over STARTTLS or to localhost). SEALTRAIL_SMTP_USERNAME,
	// SEALTRAIL_SMTP_PASSWORD_FILE.
	SMTPUsername     string `json:"smtpUsername"`
	SMTPPasswordFile string `json:"smtpPasswordFile"`
}

// resolve applies the environment and checks the dashboard's settings.
func (d *DashboardConfig) resolve() error {
	for env, field := range map[string]*string{
		"SEALTRAIL_DASHBOARD_PUBLIC_URL": &d.PublicURL, "SEALTRAIL_SMTP_ADDR": &d.SMTPAddr, "SEALTRAIL_SMTP_FROM": &d.SMTPFrom,
		"SEALTRAIL_SMTP_USERNAME": &d.SMTPUsername, "SEALTRAIL_SMTP_PASSWORD_FILE": &d.SMTPPasswordFile,
	} {
		if v, ok := os.LookupEnv(env); ok {
			*field = v
		}
	}
	if v, ok := os.LookupEnv("SEALTRAIL_DASHBOARD_DISABLED"); ok {
		d.Disabled = v == "true" || v == "1"
	}
	if d.Disabled {
		return nil
	}
	host := "localhost"
	if d.PublicURL != "" { // default: the address the service listens on (serve_dashboard.go)
		u, err := url.Parse(d.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("config: dashboard.publicUrl %q must be http(s)://host[:port]", d.PublicURL)
		}
		host = u.Hostname()
	}
	if d.SMTPAddr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(d.SMTPAddr); err != nil {
		return fmt.Errorf("config: dashboard.smtpAddr %q must be host:port", d.SMTPAddr)
	}
	if d.SMTPFrom == "" {
		d.SMTPFrom = "sealtrail@" + host
	}
	if a, err := mail.ParseAddress(d.SMTPFrom); err != nil || a.Address != d.SMTPFrom {
		return fmt.Errorf("config: dashboard.smtpFrom %q must be a plain address", d.SMTPFrom)
	}
	if (d.SMTPUsername == "") != (d.SMTPPasswordFile == "") {
		return errors.New("config: dashboard.smtpUsername and smtpPasswordFile go together")
	}
	return nil
}
