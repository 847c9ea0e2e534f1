// Command sealtrail-tsa runs sigstore timestamp-authority's RFC 3161 API (the
// library at the version go.mod pins) on one loopback address with an in-memory
// signer, for anchor/tsa's tests (internal/testenv.TSA).
//
// Upstream's timestamp-server always also serves Prometheus metrics on ":2112", every
// interface, with no flag to move or disable it; tests here listen on loopback only,
// and one fixed port also allowed a single server per machine. This command serves the
// same API handler and nothing else.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/sigstore/timestamp-authority/v2/pkg/server"
	"github.com/spf13/viper"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback host:port to serve on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "sealtrail-tsa:", err)
		os.Exit(2)
	}
}

func run(addr string) error {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %q: not a loopback IP address", addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("-addr: port %q: %w", portStr, err)
	}
	// The values timestamp-server's flags default to, with the memory signer.
	viper.Set("timestamp-signer", "memory")
	viper.Set("timestamp-signer-hash", "sha256")
	viper.Set("default-policy-oid", "1.3.6.1.4.1.57264.2")
	viper.Set("accepted-policy-oids", []string{"1.3.6.1.4.1.57264.2"})
	viper.Set("allow-custom-extensions", false)
	viper.Set("include-chain-in-response", false)
	viper.Set("enforce-intermediate-eku", true)
	viper.Set("max-request-body-size", uint64(1<<20))
	api := server.NewRestAPIServer(host, port, []string{"http"}, false, 10*time.Second, 10*time.Second)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("sealtrail-tsa: serving on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: api.GetHandler(), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
