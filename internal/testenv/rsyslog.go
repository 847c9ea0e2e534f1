package testenv

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RsyslogBin is where Debian's rsyslog package installs the daemon
// (.ci/install.d/40-rsyslog.sh installs it with rsyslog-gnutls).
const RsyslogBin = "/usr/sbin/rsyslogd"

// Rsyslog is a running rsyslogd that receives RFC 5424 over TLS (imtcp with the gtls
// driver) on 127.0.0.1 and writes each message's raw text, one a line, to Output.
type Rsyslog struct {
	// Addr is host:port of the TLS listener.
	Addr string
	// CAPEM is the throwaway CA that signed the listener's certificate (for
	// "127.0.0.1" and "localhost").
	CAPEM string
	// Output is the file of received messages.
	Output string
}

// StartRsyslog starts rsyslogd -n on a free loopback port with throwaway certificates
// in a temporary directory, and stops it (by its PID) at test end. Without rsyslogd
// or its gtls driver the test skips, or fails under CI=true.
func StartRsyslog(t testing.TB) *Rsyslog {
	t.Helper()
	gtls, _ := filepath.Glob("/usr/lib/*/rsyslog/lmnsd_gtls.so")
	if _, err := os.Stat(RsyslogBin); err != nil || len(gtls) == 0 {
		msg := "rsyslogd with rsyslog-gnutls is not installed (run .ci/install.d/40-rsyslog.sh)"
		if InCI() {
			t.Fatal(msg + " but CI=true requires it")
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	caPEM := writeCerts(t, dir)
	port := FreePort(t)
	out := filepath.Join(dir, "received.log")
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global(workDirectory="%[1]s/work" maxMessageSize="64k"
  defaultNetstreamDriver="gtls"
  defaultNetstreamDriverCAFile="%[1]s/ca.pem"
  defaultNetstreamDriverCertFile="%[1]s/cert.pem"
  defaultNetstreamDriverKeyFile="%[1]s/key.pem")
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
input(type="imtcp" port="%[2]d" address="127.0.0.1")
template(name="raw" type="string" string="%%rawmsg%%\n")
action(type="omfile" file="%[3]s" template="raw" flushOnTXEnd="on" asyncWriting="off")
`, dir, port, out)
	cfgPath := filepath.Join(dir, "rsyslog.conf")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(RsyslogBin, "-n", "-f", cfgPath, "-i", filepath.Join(dir, "rsyslogd.pid"))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rsyslogd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("rsyslogd exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("rsyslogd did not listen on %s: %s", addr, logs.String())
		}
	}
	return &Rsyslog{Addr: addr, CAPEM: caPEM, Output: out}
}

// Lines returns the messages received so far.
func (r *Rsyslog) Lines(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(r.Output)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeCerts writes a throwaway CA (ca.pem) and a server certificate for 127.0.0.1
// and localhost (cert.pem, key.pem) into dir, and returns the CA's PEM.
func writeCerts(t testing.TB, dir string) string {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sealtrail test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for name, data := range map[string][]byte{
		"ca.pem":   caPEM,
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return string(caPEM)
}
