package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// TLS modes of an SMTP connection.
const (
	TLSStartTLS = "starttls" // the default: plain connect, then STARTTLS, required
	TLSImplicit = "tls"      // TLS from the first byte (port 465)
	TLSNone     = "none"     // no TLS, for a local relay only; AUTH is then refused
)

// SMTPConfig says how to reach the mail server.
type SMTPConfig struct {
	Addr     string // host:port
	From     string // the envelope and header sender, a plain address
	Username string // AUTH PLAIN when set
	Password string
	TLS      string         // TLSStartTLS (default), TLSImplicit or TLSNone
	RootCAs  *x509.CertPool // nil: the system roots
	// Timeout bounds one whole delivery, connect to QUIT (default 30 s).
	Timeout time.Duration
}

// SMTP delivers messages to one server with the standard library's net/smtp: it has
// STARTTLS and AUTH PLAIN, which is all a text-only sender needs, and adds no
// dependency. Safe for concurrent use; each Deliver opens its own connection.
type SMTP struct {
	cfg  SMTPConfig
	host string
}

// NewSMTP checks cfg and returns the sender.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("mail: smtp address %q: %w", cfg.Addr, err)
	}
	if err := checkAddress(cfg.From); err != nil {
		return nil, fmt.Errorf("mail: from: %w", err)
	}
	switch cfg.TLS {
	case "":
		cfg.TLS = TLSStartTLS
	case TLSStartTLS, TLSImplicit:
	case TLSNone:
		if cfg.Username != "" {
			return nil, errors.New("mail: SMTP AUTH needs TLS (starttls or tls), not none")
		}
	default:
		return nil, fmt.Errorf("mail: smtp tls %q must be starttls, tls or none", cfg.TLS)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &SMTP{cfg: cfg, host: host}, nil
}

// PermanentError is a delivery the server refused for good (a 5xx reply to the
// recipient or the message): retrying cannot help.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent SMTP failure: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// permanent marks a 5xx reply as a PermanentError; other errors stay transient.
func permanent(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return &PermanentError{Err: fmt.Errorf("%s: %w", step, err)}
	}
	return fmt.Errorf("%s: %w", step, err)
}

// Deliver sends m. The bytes are a function of m alone, so a retry sends the same
// message with the same Message-ID.
func (s *SMTP) Deliver(ctx context.Context, m catalog.MailMessage) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("mail: connect %s: %w", s.cfg.Addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return fmt.Errorf("mail: deadline: %w", err)
		}
	}
	tlsConfig := &tls.Config{ServerName: s.host, RootCAs: s.cfg.RootCAs, MinVersion: tls.VersionTLS12}
	if s.cfg.TLS == TLSImplicit {
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("mail: TLS with %s: %w", s.cfg.Addr, err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		return fmt.Errorf("mail: greeting from %s: %w", s.cfg.Addr, err)
	}
	defer c.Close()
	if s.cfg.TLS == TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("mail: %s does not offer STARTTLS, which the configuration requires", s.cfg.Addr)
		}
		if err := c.StartTLS(tlsConfig); err != nil {
			return fmt.Errorf("mail: STARTTLS with %s: %w", s.cfg.Addr, err)
		}
	}
	if s.cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, s.host)); err != nil {
			return fmt.Errorf("mail: AUTH at %s: %w", s.cfg.Addr, err)
		}
	}
	// A refused MAIL FROM is the sender's configuration (STARTTLS or AUTH required,
	// sender not allowed): transient, so messages wait until the operator fixes it.
	if err := c.Mail(s.cfg.From); err != nil {
		return fmt.Errorf("mail: MAIL FROM: %w", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return permanent("mail: RCPT TO "+m.To, err)
	}
	w, err := c.Data()
	if err != nil {
		return permanent("mail: DATA", err)
	}
	if _, err := w.Write(Compose(s.cfg.From, m)); err != nil {
		return fmt.Errorf("mail: write message: %w", err)
	}
	if err := w.Close(); err != nil {
		return permanent("mail: end of DATA", err)
	}
	// The server accepted the message; a failed QUIT does not undo that.
	_ = c.Quit()
	return nil
}

// Compose returns the RFC 5322 message of m from from: text/plain UTF-8 in
// quoted-printable, CRLF line ends, its Message-ID and Date taken from the queue row.
func Compose(from string, m catalog.MailMessage) []byte {
	var b bytes.Buffer
	domain := from[strings.LastIndexByte(from, '@')+1:]
	hdr := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	hdr("From", from)
	hdr("To", m.To)
	// Encoded words each on their own folded line, so no header line nears the
	// 998-byte limit whatever the subject's script.
	subject := mime.QEncoding.Encode("utf-8", m.Subject)
	if subject != m.Subject {
		subject = strings.ReplaceAll(subject, "?= =?", "?=\r\n =?")
	}
	hdr("Subject", subject)
	hdr("Date", m.CreatedAt.UTC().Format(time.RFC1123Z))
	hdr("Message-ID", "<"+m.ID+"@"+domain+">")
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "quoted-printable")
	hdr("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	// Writes to a bytes.Buffer cannot fail.
	_, _ = qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}
