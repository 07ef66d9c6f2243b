package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are the PEM files of a self-signed certificate for 127.0.0.1 that
// serves as a server's certificate, as its own authority (CA is Cert) and
// as a client certificate.
type Certs struct{ CA, Cert, Key string }

// WriteCerts writes new Certs into a temporary directory. Certs from two
// calls do not trust each other.
func WriteCerts(tb testing.TB) Certs {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "redistest " + serial.String()},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	c := Certs{CA: filepath.Join(dir, "cert.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
	if err := os.WriteFile(c.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(c.Key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return c
}

// StartTLS runs redis-server with TLS only (no plain port) on a free
// loopback port, with new Certs, and stops it when the test ends. Clients
// need no certificate unless extra holds "--tls-auth-clients", "yes";
// the server trusts client certificates signed by its own Certs.
func StartTLS(tb testing.TB, extra ...string) (*Server, Certs) {
	tb.Helper()
	certs := WriteCerts(tb)
	pair, err := tls.LoadX509KeyPair(certs.Cert, certs.Key)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	args := append([]string{"--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key,
		"--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "no"}, extra...)
	s := &Server{tb: tb, bin: Binary(tb), args: args,
		tls: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}
	s.run()
	return s, certs
}
