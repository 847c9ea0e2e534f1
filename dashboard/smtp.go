package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"strings"
	"time"
)

// SMTPSender is a direct Mailer: one SMTP transaction per message, with STARTTLS when
// the server offers it and PLAIN authentication when a username is set (net/smtp
// refuses to send credentials unencrypted except to localhost). It has no queue and
// no retries; the mail package's queue replaces it where one is configured.
type SMTPSender struct {
	Addr     string // host:port
	From     string // a plain address
	Username string
	Password string
	Timeout  time.Duration // default 30 s
}

var _ Mailer = (*SMTPSender)(nil)

// Send sends one plain-text message.
func (m *SMTPSender) Send(ctx context.Context, to, subject, textBody string) error {
	msg, err := m.compose(to, subject, textBody)
	if err != nil {
		return err
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return fmt.Errorf("smtp address %q: %w", m.Addr, err)
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("smtp dial: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return fmt.Errorf("smtp hello: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(tlsConfig(host)); err != nil {
			return fmt.Errorf("smtp starttls: %w", err)
		}
	}
	if m.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, host)); err != nil {
			return fmt.Errorf("smtp auth: %w", err)
		}
	}
	if err := c.Mail(m.From); err != nil {
		return fmt.Errorf("smtp MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("smtp RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp write: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp end of data: %w", err)
	}
	return c.Quit()
}

// compose renders the message: UTF-8 text, quoted-printable, with a random Message-ID.
func (m *SMTPSender) compose(to, subject, textBody string) ([]byte, error) {
	for _, a := range []string{m.From, to} {
		if addr, err := mail.ParseAddress(a); err != nil || addr.Address != a {
			return nil, fmt.Errorf("smtp: %q is not a plain address", a)
		}
	}
	if strings.ContainsAny(subject, "\r\n") {
		return nil, errors.New("smtp: subject has a line break")
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("smtp: message id: %w", err)
	}
	domain := m.From[strings.LastIndexByte(m.From, '@')+1:]
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@%s>\r\n", m.From, to,
		mime.QEncoding.Encode("utf-8", subject), time.Now().Format(time.RFC1123Z), hex.EncodeToString(id[:]), domain)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(strings.ReplaceAll(textBody, "\n", "\r\n"))); err != nil {
		return nil, fmt.Errorf("smtp: body: %w", err)
	}
	if err := qp.Close(); err != nil {
		return nil, fmt.Errorf("smtp: body: %w", err)
	}
	return b.Bytes(), nil
}

func tlsConfig(host string) *tls.Config {
	return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
}
