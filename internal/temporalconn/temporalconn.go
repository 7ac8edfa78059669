// Package temporalconn builds the Temporal client's connection options from
// the environment, the same way for the gateway, the worker and the ops CLI:
// the frontend's address and namespace, and TLS or mTLS when configured.
package temporalconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
)

// Defaults of the connection.
const (
	// DefaultAddress is the Temporal frontend's host:port.
	DefaultAddress = "127.0.0.1:7233"
	// DefaultNamespace is the Temporal namespace.
	DefaultNamespace = "default"
)

// Config is where and how the client connects.
type Config struct {
	// Address is the frontend's host:port (TEMPORAL_ADDRESS).
	Address string
	// Namespace is the namespace (TEMPORAL_NAMESPACE).
	Namespace string
	// TLS is the client's TLS configuration, nil for plaintext: set by
	// TEMPORAL_TLS=true (the system's roots), TEMPORAL_TLS_CA_FILE (a PEM of
	// the CAs to trust), TEMPORAL_TLS_CERT_FILE with TEMPORAL_TLS_KEY_FILE
	// (the client certificate: mTLS) and TEMPORAL_TLS_SERVER_NAME (the name
	// the server's certificate must carry).
	TLS *tls.Config
}

// FromEnv reads the connection's configuration from getenv (os.Getenv in a
// main) and loads the TLS files it names; every problem is reported at once.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{Address: get("TEMPORAL_ADDRESS", DefaultAddress), Namespace: get("TEMPORAL_NAMESPACE", DefaultNamespace)}
	caFile, certFile, keyFile := get("TEMPORAL_TLS_CA_FILE", ""), get("TEMPORAL_TLS_CERT_FILE", ""), get("TEMPORAL_TLS_KEY_FILE", "")
	serverName, enabled := get("TEMPORAL_TLS_SERVER_NAME", ""), get("TEMPORAL_TLS", "")
	if enabled != "" && enabled != "true" && enabled != "false" {
		return Config{}, fmt.Errorf("TEMPORAL_TLS=%q: want true or false", enabled)
	}
	if enabled != "true" && caFile == "" && certFile == "" && keyFile == "" && serverName == "" {
		return c, nil
	}
	var errs []error
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CA_FILE: %w", err))
		} else {
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CA_FILE %s: no PEM certificate in it", caFile))
			}
		}
	}
	switch {
	case (certFile == "") != (keyFile == ""):
		errs = append(errs, errors.New("TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together (the client certificate of mTLS)"))
	case certFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CERT_FILE/TEMPORAL_TLS_KEY_FILE: %w", err))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("temporal connection: %w", err)
	}
	c.TLS = tc
	return c, nil
}

// Apply sets the address, namespace and TLS of o.
func (c Config) Apply(o client.Options) client.Options {
	o.HostPort, o.Namespace = c.Address, c.Namespace
	o.ConnectionOptions.TLS = c.TLS
	return o
}
