package main

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/mail"
)

// mailCatalog is what email needs of the catalog.
type mailCatalog interface {
	mail.Store
	mail.DigestCatalog
}

// startMail returns the mail queue (the dashboard sends its sign-in links through it)
// and, when SMTP is configured, starts delivering it and sending digests; stop ends
// both and waits for them.
func startMail(ctx context.Context, cfg Config, cat mailCatalog, trees mail.Trees, key ed25519.PrivateKey,
	logger *slog.Logger, reg prometheus.Registerer) (q *mail.Queue, stop func(), err error) {
	mc := cfg.Mail
	var sender mail.Sender
	if mc.SMTPAddr != "" {
		if sender, err = newSMTP(mc); err != nil {
			return nil, nil, err
		}
	}
	q, err = mail.NewQueue(cat, sender, mail.QueueConfig{Poll: ms(mc.PollMS), Logger: logger, Registerer: reg})
	if err != nil {
		return nil, nil, err
	}
	if sender == nil {
		logger.Info("mail: no mail.smtpAddr configured; email is queued but not sent, and no digests are built")
		return q, func() {}, nil
	}
	d, err := mail.NewDigester(cat, trees, q, mail.DigestConfig{Origin: cfg.Origin, Key: key,
		Interval: ms(mc.DigestIntervalMS), Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(ctx) })
	wg.Go(func() { d.Run(ctx) })
	logger.Info("mail: delivering", "smtp", mc.SMTPAddr, "tls", mc.TLS)
	return q, func() { cancel(); wg.Wait() }, nil
}

// newSMTP builds the SMTP sender of mc, reading its password and CA files.
func newSMTP(mc MailConfig) (*mail.SMTP, error) {
	c := mail.SMTPConfig{Addr: mc.SMTPAddr, From: mc.From, Username: mc.Username, TLS: mc.TLS}
	if mc.PasswordFile != "" {
		pw, err := private.ReadSecret("SMTP password", mc.PasswordFile, maxSecretFile)
		if err != nil {
			return nil, err
		}
		c.Password = strings.TrimRight(string(pw), "\r\n")
	}
	if mc.CAFile != "" {
		pem, err := os.ReadFile(mc.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mail.caFile: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mail.caFile %s holds no PEM certificate", mc.CAFile)
		}
	}
	return mail.NewSMTP(c)
}
