package resp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// LoadTLS builds a TLS configuration from PEM files: ca (the servers'
// authority; empty means the system pool), and cert with key (a client
// certificate; both or neither). insecureSkipVerify turns off server
// verification, for tests only.
func LoadTLS(ca, cert, key string, insecureSkipVerify bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecureSkipVerify}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("resp: tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("resp: tls ca %s: no PEM certificate found", ca)
		}
		cfg.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("resp: tls cert and key must be given together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("resp: tls cert/key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
