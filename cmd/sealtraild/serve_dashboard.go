package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/dashboard"
	"github.com/sealtrail/sealtrail/httpapi"
	"github.com/sealtrail/sealtrail/mail"
)

// withDashboard mounts the dashboard at /dashboard/ beside the API (same origin), or
// returns the API alone when it is disabled. base is the address the service listens
// on, the public URL unless one is configured. Sign-in links go through queue, and
// only when mail.smtpAddr is set: without it they would be queued but never sent.
func withDashboard(cfg *Config, base string, api *httpapi.Server, ctl *control.Service, store dashboard.Store,
	queue *mail.Queue, operatorToken string, logger *slog.Logger) (http.Handler, error) {
	d := &cfg.Dashboard
	if d.Disabled {
		return api.Handler(), nil
	}
	if d.PublicURL == "" {
		d.PublicURL = base
	}
	var mailer dashboard.Mailer
	if cfg.Mail.SMTPAddr != "" {
		mailer = queue
	}
	dash, err := dashboard.New(dashboard.Config{Control: ctl, Store: store, API: api, Mailer: mailer,
		OperatorToken: operatorToken, PublicURL: d.PublicURL, Logger: logger})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.Prefix, dash.Handler())
	mux.Handle("/", api.Handler())
	logger.Info("dashboard serving", "url", strings.TrimSuffix(d.PublicURL, "/")+dashboard.Prefix, "email_sign_in", mailer != nil)
	return mux, nil
}

// printDashboard tells make run's user where the dashboard is and how to sign in.
func printDashboard(out io.Writer, cfg Config) {
	d := cfg.Dashboard
	if d.Disabled {
		return
	}
	fmt.Fprintf(out, "Dashboard: %s%s\n  Operators: sign in with the operator token above.\n", strings.TrimSuffix(d.PublicURL, "/"), dashboard.Prefix)
	if m := cfg.Mail; m.SMTPAddr != "" {
		fmt.Fprintf(out, "  Members: enter your email; a one-time sign-in link is sent from %s through %s.\n\n", m.From, m.SMTPAddr)
	} else {
		fmt.Fprintf(out, "  Members: sign in by emailed link once SMTP is set, e.g. SEALTRAIL_SMTP_ADDR=127.0.0.1:1025\n"+
			"  SEALTRAIL_SMTP_TLS=none with mailpit --smtp=127.0.0.1:1025 (its inbox at http://127.0.0.1:8025);\n"+
			"  add members with bin/sealtraild admin member add.\n\n")
	}
}
