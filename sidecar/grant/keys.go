package grant

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/crypto/curve25519"
)

// KeySize is the size of an X25519 public or private key in bytes.
const KeySize = 32

// PublicKey is a bot's X25519 public key. Members seal grants to it. Its
// text form ([PublicKey.String], [ParsePublicKey]) is standard padded
// base64 of the 32 bytes: 44 characters.
type PublicKey [KeySize]byte

// String returns the key as standard padded base64.
func (k PublicKey) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// MarshalText implements encoding.TextMarshaler (the base64 form).
func (k PublicKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ParsePublicKey parses the base64 text form of a public key. Surrounding
// white space is ignored. It refuses anything but exactly 32 bytes of
// standard padded base64, and a low-order point (such as all zeros): a box
// sealed to one would be readable by anyone.
func ParsePublicKey(s string) (PublicKey, error) {
	var k PublicKey
	b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != KeySize {
		return k, errors.New("grant: a public key is 44 characters of standard base64 (32 bytes)")
	}
	copy(k[:], b)
	// X25519 with any scalar fails exactly for low-order points.
	if _, err := curve25519.X25519(bytes.Repeat([]byte{9}, KeySize), k[:]); err != nil {
		return PublicKey{}, errors.New("grant: the public key is a low-order point and cannot be sealed to")
	}
	return k, nil
}

// PrivateKey is a bot's X25519 private key. It opens grants sealed to its
// [PrivateKey.Public] key.
//
// Its String and Format methods print "[private key]", so a key passed to
// a logger or a format verb by mistake does not leak; [PrivateKey.Encode]
// is the one way to get the secret text, for the key file.
type PrivateKey struct {
	priv [KeySize]byte
	pub  PublicKey
}

// GenerateKey returns a new key pair. random nil means crypto/rand.
func GenerateKey(random io.Reader) (*PrivateKey, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [KeySize]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return nil, fmt.Errorf("grant: generate key: %w", err)
	}
	return newPrivateKey(b)
}

func newPrivateKey(b [KeySize]byte) (*PrivateKey, error) {
	pub, err := curve25519.X25519(b[:], curve25519.Basepoint)
	if err != nil {
		return nil, errors.New("grant: invalid private key")
	}
	k := &PrivateKey{priv: b}
	copy(k.pub[:], pub)
	return k, nil
}

// ParsePrivateKey parses the base64 text form of a private key (standard
// padded base64 of 32 bytes, as [PrivateKey.Encode] writes it). Surrounding
// white space is ignored. The error never repeats the input.
func ParsePrivateKey(s string) (*PrivateKey, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != KeySize {
		return nil, errors.New("grant: a private key is 44 characters of standard base64 (32 bytes)")
	}
	var a [KeySize]byte
	copy(a[:], b)
	return newPrivateKey(a)
}

// Public returns the public key members seal grants to.
func (k *PrivateKey) Public() PublicKey { return k.pub }

// Encode returns the secret text form of the key: standard padded base64.
// It MUST only be written to the key file (see [WriteKeyFile]): whoever
// reads it opens every grant sealed to this bot.
func (k *PrivateKey) Encode() string { return base64.StdEncoding.EncodeToString(k.priv[:]) }

// String returns "[private key]", never the key.
func (k *PrivateKey) String() string { return "[private key]" }

// GoString returns "[private key]", never the key.
func (k *PrivateKey) GoString() string { return "[private key]" }

// Format prints "[private key]" whatever the verb.
func (k *PrivateKey) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "[private key]") }

// KeyFileMode is the permission WriteKeyFile gives a key file.
const KeyFileMode fs.FileMode = 0o600

// WriteKeyFile writes k's secret text form, one line, to path with mode
// 0600. It refuses to replace an existing file unless overwrite is set
// (a lost private key cannot open the grants already sealed to it); when it
// does replace one, the old file's permissions are reset to 0600 too.
func WriteKeyFile(path string, k *PrivateKey, overwrite bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, KeyFileMode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("grant: %s already exists; refusing to overwrite a private key (grants sealed to it could no longer be opened)", path)
		}
		return fmt.Errorf("grant: write key file: %w", err)
	}
	// The mode given to OpenFile applies only to a new file (and is masked
	// by the umask); make sure an existing or masked file ends at 0600.
	if err := f.Chmod(KeyFileMode); err != nil {
		f.Close()
		return fmt.Errorf("grant: write key file: %w", err)
	}
	if _, err := io.WriteString(f, k.Encode()+"\n"); err != nil {
		f.Close()
		return fmt.Errorf("grant: write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("grant: write key file: %w", err)
	}
	return nil
}

// maxKeyFileBytes bounds what LoadKeyFile reads: one line of base64 and
// some white space.
const maxKeyFileBytes = 1024

// LoadKeyFile reads a private key written by [WriteKeyFile]: one line of
// base64 (surrounding white space ignored). Like ssh, it refuses a file
// that the group or others may read, write or execute (any of the mode
// bits 0077): a key others could read is a key others hold.
func LoadKeyFile(path string) (*PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grant: key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("grant: key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("grant: key file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("grant: key file %s has mode %04o: it is accessible by group or others; run `chmod 600 %s`", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("grant: key file: %w", err)
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("grant: key file %s is not a key (too large)", path)
	}
	k, err := ParsePrivateKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("grant: key file %s: %w", path, err)
	}
	return k, nil
}
