package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker/regsync"
)

// registrySyncer builds the broker's registry sync job from its flags, or
// nil without --registry-url.
func registrySyncer(f *brokerFlags, log zerolog.Logger) (*regsync.Syncer, error) {
	if f.registryURL == "" {
		if f.registryPubkey != "" || f.registryCA != "" {
			return nil, errors.New("--registry-pubkey and --registry-ca need --registry-url")
		}
		return nil, nil
	}
	if f.registryPubkey == "" {
		return nil, errors.New("--registry-url needs --registry-pubkey, the publisher's minisign public key: a snapshot is served only once its signature verifies")
	}
	pub, err := readPublicKey(f.registryPubkey)
	if err != nil {
		return nil, fmt.Errorf("--registry-pubkey: %v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if f.registryCA != "" {
		pem, err := os.ReadFile(f.registryCA)
		if err != nil {
			return nil, fmt.Errorf("--registry-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--registry-ca %s: no PEM certificate in it", f.registryCA)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return regsync.New(regsync.Config{
		URL: f.registryURL, PublicKey: pub, Interval: f.registryInterval,
		Client: &http.Client{Transport: tr, Timeout: time.Minute},
		Logger: log.With().Str("component", "registry-sync").Logger(),
	})
}
