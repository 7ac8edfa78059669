// Package temporalconn is the Temporal client's connection, configured the
// same way for the gateway and the worker: the frontend's address and
// namespace, TLS or mTLS when configured, and the access tokens of a
// client-credentials grant when the frontend's authorization asks for
// them. Config is parsed from the
// environment as part of each binary's configuration (internal/envconfig).
package temporalconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"go.temporal.io/sdk/client"
)

// Config is where and how the client connects. The TLS fields name files;
// Load reads them into TLS and readies the token grant.
type Config struct {
	// Address is the frontend's host:port.
	Address string `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	// Namespace is the namespace.
	Namespace string `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	// TaskQueue is the operation workflows' task queue, the gateway's and
	// the worker's alike: declared once, here.
	TaskQueue string `env:"ONCEGATE_TASK_QUEUE" envDefault:"oncegate"`
	// TLSEnabled turns TLS on with the system's roots (TEMPORAL_TLS=true);
	// any of the other TLS fields turns it on too.
	TLSEnabled bool `env:"TEMPORAL_TLS"`
	// CAFile is a PEM of the CAs to trust.
	CAFile string `env:"TEMPORAL_TLS_CA_FILE"`
	// CertFile and KeyFile are the client certificate of mTLS; they go together.
	CertFile string `env:"TEMPORAL_TLS_CERT_FILE"`
	// KeyFile is CertFile's private key.
	KeyFile string `env:"TEMPORAL_TLS_KEY_FILE"`
	// ServerName is the name the server's certificate must carry.
	ServerName string `env:"TEMPORAL_TLS_SERVER_NAME"`
	// GRPCGzip compresses the client's gRPC requests with gzip (and asks
	// for gzip answers), the Temporal SDK's default. Off, each call skips a
	// gzip compressor's and decompressor's reset on both ends, which on a
	// workflow's small messages costs the client and the server CPU and
	// saves next to no bytes next to its server.
	GRPCGzip bool `env:"TEMPORAL_GRPC_GZIP"`
	// OAuth is the grant of the access tokens sent to the frontend (unset:
	// none).
	OAuth OAuth
	// TLS is the client's TLS configuration, nil for plaintext: what
	// Load made of the fields above.
	TLS *tls.Config `env:"-"`
	// headers sends OAuth's tokens (nil: none); made by Load.
	headers *tokenHeaders
}

// Load reads the files the TLS fields name into c.TLS (nil when TLS is
// off) and readies the token grant of c.OAuth (no token is fetched before
// the first call); every problem is reported at once.
func (c *Config) Load() error {
	c.headers = nil
	errs := []error{c.OAuth.validate()}
	if errs[0] == nil && c.OAuth.enabled() {
		c.headers = newTokenHeaders(c.OAuth)
	}
	tc, tlsErrs := c.loadTLS()
	c.TLS = tc
	if err := errors.Join(append(errs, tlsErrs...)...); err != nil {
		c.TLS = nil
		return fmt.Errorf("temporal connection: %w", err)
	}
	return nil
}

// loadTLS reads the files the TLS fields name (nil when TLS is off).
func (c *Config) loadTLS() (*tls.Config, []error) {
	if !c.TLSEnabled && c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" && c.ServerName == "" {
		return nil, nil
	}
	var errs []error
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CA_FILE: %w", err))
		} else {
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CA_FILE %s: no PEM certificate in it", c.CAFile))
			}
		}
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		errs = append(errs, errors.New("TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together (the client certificate of mTLS)"))
	case c.CertFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CERT_FILE/TEMPORAL_TLS_KEY_FILE: %w", err))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, errs
}

// Apply sets the address, namespace, TLS, gRPC compression and, with a
// token grant, the headers provider of o.
func (c Config) Apply(o client.Options) client.Options {
	o.HostPort, o.Namespace = c.Address, c.Namespace
	o.ConnectionOptions.TLS = c.TLS
	if c.headers != nil {
		o.HeadersProvider = c.headers
	}
	if c.GRPCGzip {
		o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionGzip{}
	} else {
		o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	return o
}
