package main

import (
	"fmt"
	"net/url"
	"os"
)

// DashboardConfig configures the web dashboard at /dashboard/ (package dashboard). Its
// sign-in links go out through the mail queue (MailConfig): members can sign in by
// email once mail.smtpAddr is set. In the JSON config it is the "dashboard" object;
// the environment variables named below override it.
type DashboardConfig struct {
	// Disabled turns the dashboard off (SEALTRAIL_DASHBOARD_DISABLED=true).
	Disabled bool `json:"disabled"`
	// PublicURL is the service's address as browsers reach it, the base of emailed
	// sign-in links (default http://<listen address>); https makes the session cookie
	// Secure. Its host also names the default mail sender (config_mail.go).
	// SEALTRAIL_DASHBOARD_PUBLIC_URL.
	PublicURL string `json:"publicUrl"`
}

// resolve applies the environment and checks the dashboard's settings.
func (d *DashboardConfig) resolve() error {
	if v, ok := os.LookupEnv("SEALTRAIL_DASHBOARD_PUBLIC_URL"); ok {
		d.PublicURL = v
	}
	if v, ok := os.LookupEnv("SEALTRAIL_DASHBOARD_DISABLED"); ok {
		d.Disabled = v == "true" || v == "1"
	}
	if d.Disabled || d.PublicURL == "" { // default: the address the service listens on (serve_dashboard.go)
		return nil
	}
	u, err := url.Parse(d.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("config: dashboard.publicUrl %q must be http(s)://host[:port]", d.PublicURL)
	}
	return nil
}

// publicHost is the host of the public URL, or localhost without a (valid) one: the
// domain of the default mail sender.
func (d *DashboardConfig) publicHost() string {
	if u, err := url.Parse(d.PublicURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "localhost"
}
