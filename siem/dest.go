package siem

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Destination kinds.
const (
	KindSyslog  = "syslog"  // RFC 5424 messages over TLS (RFC 5425 octet-counted framing)
	KindHEC     = "hec"     // Splunk HTTP Event Collector
	KindWebhook = "webhook" // HTTPS POST signed as Standard Webhooks describes
)

// Kinds lists the destination kinds.
var Kinds = []string{KindSyslog, KindHEC, KindWebhook}

// Settings is a destination's Config in the catalog: where to deliver and with which
// credentials. Which members apply depends on the kind (see Validate).
type Settings struct {
	// Address is the syslog receiver, host:port (TLS, typically 6514).
	Address string `json:"address,omitempty"`
	// Hostname is the HOSTNAME of syslog messages (default: the machine's name).
	Hostname string `json:"hostname,omitempty"`
	// URL is the HEC base URL (https://splunk:8088) or the webhook URL; https only.
	URL string `json:"url,omitempty"`
	// Token is the HEC token.
	Token string `json:"token,omitempty"`
	// Index and SourceType are optional HEC event fields.
	Index      string `json:"index,omitempty"`
	SourceType string `json:"sourceType,omitempty"`
	// Secret is the webhook signing secret, whsec_<base64 of 24 to 64 bytes>; the
	// service generates one when it is not given.
	Secret string `json:"secret,omitempty"`
	// CACert is PEM: the CAs that the receiver's certificate must chain to, instead of
	// the system roots. ServerName overrides the name checked in it.
	CACert     string `json:"caCert,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

// Validate checks s for kind, filling the webhook secret when absent (generated
// reports whether it did).
func (s *Settings) Validate(kind string) (generated bool, err error) {
	if s.CACert != "" {
		if _, err := s.roots(); err != nil {
			return false, err
		}
	}
	for name, v := range map[string]string{"hostname": s.Hostname, "index": s.Index, "sourceType": s.SourceType, "serverName": s.ServerName} {
		if len(v) > 255 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return false, fmt.Errorf("%s must be at most 255 printable characters without spaces", name)
		}
	}
	switch kind {
	case KindSyslog:
		if s.URL != "" || s.Token != "" || s.Secret != "" || s.Index != "" || s.SourceType != "" {
			return false, errors.New("a syslog destination takes address, hostname, caCert and serverName only")
		}
		host, port, err := net.SplitHostPort(s.Address)
		if err != nil || host == "" || port == "" {
			return false, fmt.Errorf("syslog address %q must be host:port", s.Address)
		}
	case KindHEC:
		if s.Address != "" || s.Secret != "" || s.Hostname != "" {
			return false, errors.New("a hec destination takes url, token, index, sourceType, caCert and serverName only")
		}
		if err := httpsURL(s.URL); err != nil {
			return false, err
		}
		if s.Token == "" || len(s.Token) > 256 || strings.ContainsAny(s.Token, " \t\r\n") {
			return false, errors.New("a hec destination needs a token (at most 256 characters, no spaces)")
		}
	case KindWebhook:
		if s.Address != "" || s.Token != "" || s.Index != "" || s.SourceType != "" || s.Hostname != "" {
			return false, errors.New("a webhook destination takes url, secret, caCert and serverName only")
		}
		if err := httpsURL(s.URL); err != nil {
			return false, err
		}
		if s.Secret == "" {
			var k [32]byte
			if _, err := rand.Read(k[:]); err != nil {
				return false, fmt.Errorf("webhook secret: %w", err)
			}
			s.Secret = "whsec_" + base64.StdEncoding.EncodeToString(k[:])
			generated = true
		}
		if _, err := secretKey(s.Secret); err != nil {
			return false, err
		}
	default:
		return false, fmt.Errorf("kind %q must be one of %s", kind, strings.Join(Kinds, ", "))
	}
	return generated, nil
}

func httpsURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || len(raw) > 2048 {
		return fmt.Errorf("url %q must be an https:// URL without credentials", raw)
	}
	return nil
}

// secretKey decodes a Standard Webhooks secret, whsec_<base64>.
func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(key) < 24 || len(key) > 64 {
		return nil, errors.New("webhook secret must be whsec_ followed by the base64 of 24 to 64 bytes")
	}
	return key, nil
}

func (s *Settings) roots() (*x509.CertPool, error) {
	if s.CACert == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(s.CACert)) {
		return nil, errors.New("caCert must hold at least one PEM certificate")
	}
	return pool, nil
}

// tlsConfig is the client TLS configuration for s (TLS 1.2 at least).
func (s *Settings) tlsConfig() (*tls.Config, error) {
	roots, err := s.roots()
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: roots, ServerName: s.ServerName, MinVersion: tls.VersionTLS12}, nil
}

// Redacted is s as the operator API shows it: secrets replaced by a marker.
func (s Settings) Redacted() Settings {
	if s.Token != "" {
		s.Token = "(set)"
	}
	if s.Secret != "" {
		s.Secret = "(set)"
	}
	return s
}

func validFormat(f string) bool { return slices.Contains(Formats, f) }
