package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// MailpitUser and MailpitPassword are the SMTP credentials the started mailpit accepts.
const (
	MailpitUser     = "sealtrail"
	MailpitPassword = "mail-secret"
)

// Mailpit is a running mailpit (the SMTP peer, PEERS.md): SMTP on SMTPAddr with
// STARTTLS required (certificate for 127.0.0.1 signed by RootCAs) and AUTH with
// MailpitUser/MailpitPassword, and its HTTP API at API to read mail back.
type Mailpit struct {
	SMTPAddr string
	API      string // http://127.0.0.1:port
	RootCAs  *x509.CertPool
	CertFile string // the PEM certificate RootCAs holds, for a process to trust

	t    testing.TB
	args []string
	cmd  *exec.Cmd
}

// StartMailpit starts mailpit on free loopback ports, stopped when the test ends.
// Without the binary (.ci/install.d/40-mailpit.sh) the test skips, or fails under
// CI=true. Extra flags (e.g. --smtp-allowed-recipients) go to the command line.
func StartMailpit(t testing.TB, extra ...string) *Mailpit {
	t.Helper()
	bin, err := exec.LookPath("mailpit")
	if err != nil {
		if gopath, gerr := exec.Command("go", "env", "GOPATH").Output(); gerr == nil {
			p := filepath.Join(string(trimNL(gopath)), "bin", "mailpit")
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		if InCI() {
			t.Fatalf("mailpit is required under CI=true but is not installed (.ci/install.d/40-mailpit.sh)")
		}
		t.Skip("mailpit not installed: run .ci/install.d/40-mailpit.sh")
	}
	dir := t.TempDir()
	pool := writeCert(t, dir)
	auth := filepath.Join(dir, "auth")
	if err := os.WriteFile(auth, []byte(MailpitUser+":"+MailpitPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Mailpit{SMTPAddr: freeAddr(t), RootCAs: pool, CertFile: filepath.Join(dir, "cert.pem"), t: t}
	api := freeAddr(t)
	m.API = "http://" + api
	m.args = append([]string{bin, "--smtp=" + m.SMTPAddr, "--listen=" + api, "--disable-version-check", "--quiet",
		"--database=" + filepath.Join(dir, "mailpit.db"), "--smtp-tls-cert=" + filepath.Join(dir, "cert.pem"),
		"--smtp-tls-key=" + filepath.Join(dir, "key.pem"), "--smtp-require-starttls", "--smtp-auth-file=" + auth,
		"--smtp-disable-rdns"}, extra...)
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// Start (re)starts the server on its ports and waits until both answer.
func (m *Mailpit) Start() {
	m.t.Helper()
	if m.cmd != nil {
		return
	}
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("testenv: start mailpit: %v", err)
	}
	m.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", m.SMTPAddr, time.Second)
		if err == nil {
			c.Close()
			if resp, err := http.Get(m.API + "/api/v1/info"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			m.Stop()
			m.t.Fatalf("testenv: mailpit did not answer on %s and %s", m.SMTPAddr, m.API)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (its stored mail stays for the next Start).
func (m *Mailpit) Stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
	m.cmd = nil
}

// MailpitMessage is one message as mailpit's list API summarizes it.
type MailpitMessage struct {
	ID      string `json:"ID"`
	Subject string `json:"Subject"`
	To      []struct {
		Address string `json:"Address"`
	} `json:"To"`
	MessageID string `json:"MessageID"`
}

// Messages returns every message mailpit holds, newest first.
func (m *Mailpit) Messages(t testing.TB) []MailpitMessage {
	t.Helper()
	var out struct {
		Messages []MailpitMessage `json:"messages"`
	}
	m.getJSON(t, "/api/v1/messages?limit=1000", &out)
	return out.Messages
}

// Raw returns a message's source (.eml) as received.
func (m *Mailpit) Raw(t testing.TB, id string) []byte {
	t.Helper()
	resp, err := http.Get(m.API + "/api/v1/message/" + id + "/raw")
	if err != nil {
		t.Fatalf("mailpit raw %s: %v", id, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("mailpit raw %s: %v", id, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mailpit raw %s: %s", id, resp.Status)
	}
	return b
}

// CountTo returns how many messages to the address to mailpit holds.
func (m *Mailpit) CountTo(ctx context.Context, to string) (int, error) {
	msgs, err := m.search(ctx, to)
	return len(msgs), err
}

// LatestText returns the plain-text body of the newest message to the address to once
// there are more than after of them (CountTo before the mail was asked for), waiting
// up to 10 s: mail that goes through a queue arrives after the request that sent it.
func (m *Mailpit) LatestText(ctx context.Context, to string, after int) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, err := m.search(ctx, to)
		if err != nil {
			return "", err
		}
		if len(msgs) > after {
			var msg struct {
				Text string `json:"Text"`
			}
			if err := m.get(ctx, "/api/v1/message/"+url.PathEscape(msgs[0].ID), &msg); err != nil {
				return "", err
			}
			return msg.Text, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("mailpit: no new message to %s (%d before)", to, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// search returns the messages to the address to, newest first.
func (m *Mailpit) search(ctx context.Context, to string) ([]MailpitMessage, error) {
	var list struct {
		Messages []MailpitMessage `json:"messages"`
	}
	err := m.get(ctx, "/api/v1/search?limit=1000&query="+url.QueryEscape("to:"+to), &list)
	return list.Messages, err
}

// get reads the JSON answer of mailpit's API at path into v.
func (m *Mailpit) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.API+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("mailpit %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mailpit %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("mailpit %s: %w", path, err)
	}
	return nil
}

func (m *Mailpit) getJSON(t testing.TB, path string, v any) {
	t.Helper()
	if err := m.get(context.Background(), path, v); err != nil {
		t.Fatal(err)
	}
}

// freeAddr returns a loopback address with a port free at the time of the call.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// writeCert writes a self-signed certificate for 127.0.0.1 (cert.pem, key.pem) into
// dir and returns a pool that trusts it.
func writeCert(t testing.TB, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{"cert.pem": {Type: "CERTIFICATE", Bytes: der}, "key.pem": {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(fmt.Errorf("parse the test certificate: %w", err))
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
