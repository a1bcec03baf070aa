package snapshot

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"strconv"
	"strings"

	"aead.dev/minisign"
)

// GenerateKey makes a new Ed25519 key pair and returns both in minisign's
// text formats: the public key file (two lines: an untrusted comment and
// the base64 key) and the unencrypted secret key file. random nil means
// crypto/rand.
func GenerateKey(random io.Reader) (public, private []byte, err error) {
	if random == nil {
		random = rand.Reader
	}
	pub, priv, err := minisign.GenerateKey(random)
	if err != nil {
		return nil, nil, err
	}
	pubText, err := pub.MarshalText()
	if err != nil {
		return nil, nil, err
	}
	privText, err := priv.MarshalText()
	if err != nil {
		return nil, nil, err
	}
	return append(pubText, '\n'), append(privText, '\n'), nil
}

// ParsePublicKey reads a minisign public key: the file's text (an
// optional "untrusted comment:" line, then the base64 key) or the base64
// key alone, as `minisign -P` takes it.
func ParsePublicKey(text []byte) (minisign.PublicKey, error) {
	var pub minisign.PublicKey
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	key := strings.TrimSpace(lines[len(lines)-1])
	if err := pub.UnmarshalText([]byte(key)); err != nil {
		return pub, fmt.Errorf("not a minisign public key (want the .pub file or its base64 line): %w", err)
	}
	return pub, nil
}

// ParsePrivateKey reads an unencrypted minisign secret key file (as
// [GenerateKey] writes it, or `minisign -G -W`). A password-protected key
// is refused: decrypt it with minisign first.
func ParsePrivateKey(text []byte) (minisign.PrivateKey, error) {
	var priv minisign.PrivateKey
	if minisign.IsEncrypted(text) {
		return priv, fmt.Errorf("the secret key is password-protected; pinned reads unencrypted keys only (minisign -G -W), kept with mode 0600")
	}
	if err := priv.UnmarshalText(bytes.TrimSpace(text)); err != nil {
		return priv, fmt.Errorf("not a minisign secret key: %w", err)
	}
	return priv, nil
}

// KeyID returns a key's minisign id as minisign prints it (16 upper-case
// hex digits).
func KeyID(pub minisign.PublicKey) string { return keyID(pub.ID()) }

func keyID(id uint64) string {
	s := strings.ToUpper(strconv.FormatUint(id, 16))
	return strings.Repeat("0", 16-len(s)) + s
}

// TrustedComment is the signed comment of a snapshot's signature: the
// snapshot's version and digest, so `minisign -V` shows what it verified.
func (s *Snapshot) TrustedComment() string {
	return "pinned registry snapshot version:" + strconv.FormatUint(s.Version, 10) + " digest:" + s.Digest
}

// Sign signs a snapshot archive (the bytes [Snapshot.Marshal] wrote) and
// returns the minisign signature file (prehashed Ed25519, BLAKE2b-512, as
// minisign 0.8 and later write by default; `minisign -Vm snapshot.json
// -p key.pub` verifies it). The archive must parse ([Parse]). Signatures
// are deterministic: the same key and archive give the same bytes.
func Sign(priv minisign.PrivateKey, archive []byte) ([]byte, error) {
	s, err := Parse(archive)
	if err != nil {
		return nil, err
	}
	r := minisign.NewReader(bytes.NewReader(archive))
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	sig := r.SignWithComments(priv, s.TrustedComment(), "signature from pinned registry key "+keyID(priv.ID()))
	return append(sig, '\n'), nil
}

// Verify checks the signature of a snapshot archive with the trusted
// public key, then parses it ([Parse]). A signature by another key, over
// other bytes or malformed is KindBadSignature; the signed archive must
// then also be consistent (KindTampered otherwise) and load. The trusted
// comment is not read: the archive itself states its version and digest,
// so a signature `minisign -Sm` made verifies too.
func Verify(pub minisign.PublicKey, archive, signature []byte) (*Snapshot, error) {
	if len(archive) > MaxBytes {
		return nil, fail(KindMalformed, "%d bytes, over the limit of %d", len(archive), MaxBytes)
	}
	var sig minisign.Signature
	if err := sig.UnmarshalText(bytes.TrimSpace(signature)); err != nil {
		return nil, fail(KindBadSignature, "not a minisign signature: %v", err)
	}
	if sig.KeyID != pub.ID() {
		return nil, fail(KindBadSignature, "signed by key %s, not the trusted key %s", keyID(sig.KeyID), KeyID(pub))
	}
	r := minisign.NewReader(bytes.NewReader(archive))
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	ok := false
	if sig.Algorithm == minisign.HashEdDSA {
		ok = r.Verify(pub, signature)
	} else {
		ok = minisign.Verify(pub, archive, signature)
	}
	if !ok {
		return nil, fail(KindBadSignature, "the signature by key %s does not verify over these bytes", KeyID(pub))
	}
	s, err := Parse(archive)
	if err != nil {
		return nil, err
	}
	return s, nil
}
