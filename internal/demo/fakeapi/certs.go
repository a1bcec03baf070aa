package fakeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certs is the fake's in-memory PKI: a CA and one leaf signed by it.
type certs struct {
	ca    *x509.Certificate
	caPEM []byte
	leaf  tls.Certificate
}

// newCerts generates an ECDSA P-256 CA and a leaf certificate for dnsNames
// plus 127.0.0.1 and ::1, valid for a year. Keys never leave memory.
func newCerts(dnsNames []string) (*certs, error) {
	now := time.Now()
	template := func(cn string) *x509.Certificate {
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		if err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		return &x509.Certificate{
			SerialNumber: serial.Add(serial, big.NewInt(1)),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"pinned fakeapi (tests only)"}},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(365 * 24 * time.Hour),
		}
	}
	caKey, err1 := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafKey, err2 := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("fakeapi: keys: %w", err)
	}
	caTmpl := template("pinned fakeapi test CA")
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caTmpl.BasicConstraintsValid, caTmpl.IsCA, caTmpl.MaxPathLenZero = true, true, true
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: CA certificate: %w", err)
	}
	leafTmpl := template(dnsNames[0])
	leafTmpl.KeyUsage, leafTmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	leafTmpl.DNSNames, leafTmpl.IPAddresses = dnsNames, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: leaf certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: leaf certificate: %w", err)
	}
	return &certs{
		ca:    ca,
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		leaf:  tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey, Leaf: leaf},
	}, nil
}
