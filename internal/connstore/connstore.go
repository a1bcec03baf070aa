// Package connstore keeps one person's connections to third-party
// services on their own machine, for `pinned connect`, `pinned
// connections` and `pinned mcp` (docs/MCP.md).
//
// A connection is a service id, the cap the person chose (read-only by
// default, or read & write), the credential (its kind, the token and, for
// an expiring OAuth pair, the refresh token and the token's expiry) and
// the viewer identity the credential was verified as. All connections
// live in one file, sealed with an anonymous sealed box
// (golang.org/x/crypto/nacl/box, as grants are) to a local X25519 key:
//
//	<dir>/key                 the local private key, 0600 (grant.WriteKeyFile)
//	<dir>/connections.sealed  the sealed connections, 0600
//
// where dir is $XDG_CONFIG_HOME/pinned by default ([DefaultDir],
// os.UserConfigDir). The directory is created 0700. Both files are
// refused when the group or others may read them (as ssh refuses a key).
// Sealing keeps the tokens out of backups, editors and greps of the config
// directory that do not also take the key file; it does not protect them
// from a process running as the same user, which can read both files.
//
// Writes replace the file atomically (a temporary file in the same
// directory, then rename). A write is a read-modify-write under a
// process-wide mutex and, on unix, an exclusive flock(2) on <dir>/.lock,
// so two processes writing at once (a `pinned connect` while `pinned mcp`
// re-seals a rotated pair, or two agents' `pinned mcp`) each re-read the
// other's change before sealing theirs: none is lost.
//
// The directory, the key and the store file must be the user's own
// (owner checked on unix), not open to group or others, and the key and
// store file must be regular files, not symbolic links: a directory
// someone else can write is a store they can swap.
//
// The local key is also the "member key" rotated token pairs are sealed
// back to ([Store.Key], grant.Rotated): a pair the sidecar rotates during
// a call is re-sealed into the store at once ([Store.PutRotated]).
//
// It imports only package grant (keys, sealed boxes, Secret),
// internal/jsonv (strict JSON) and internal/display (the rule for text
// people read), so cmd/pinned and package mcpserver can use it.
package connstore

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/secret"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// File names inside the store's directory.
const (
	KeyFile   = "key"
	StoreFile = "connections.sealed"
	lockFile  = ".lock"
)

// Caps a connection can have.
const (
	CapRead  = "read"
	CapWrite = "write"
)

// FileMode is the permission of the key and store files; DirMode of the
// directory.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// maxStoreBytes bounds the sealed file read (1 MiB: hundreds of token
// pairs).
const maxStoreBytes = 1 << 20

// MaxViewerLen bounds the viewer identity kept.
const MaxViewerLen = 128

// ErrNotConnected is returned for a service without a connection.
var ErrNotConnected = errors.New("connstore: not connected")

// Connection is one service connected by the person.
type Connection struct {
	// Service is the manifest id ("github").
	Service string
	// Cap is "read" (read-only) or "write" (read & write).
	Cap string
	// Kind is the credential kind: "pat" or "oauth" (grant.KindPAT,
	// grant.KindOAuth).
	Kind string
	// Token is the access token or pasted key.
	Token secret.Secret
	// User is the first part of a two-part pasted credential (an account
	// email of HTTP Basic, a key beside a token), sealed like Token.
	User secret.Secret
	// Tenant is the tenant label of a service whose host is per
	// connection ("acme" of acme.atlassian.net), set at connect time.
	Tenant string
	// Refresh is the refresh token of an expiring OAuth pair, if any.
	Refresh secret.Secret
	// TokenExpiresAt is when Token expires (RFC 3339), "" if unknown or
	// never.
	TokenExpiresAt string
	// Viewer is who the credential was verified as (the manifest's viewer
	// op: a login, an e-mail or an account id), for display.
	Viewer string
	// ConnectedAt is when the connection was stored (UTC, seconds).
	ConnectedAt time.Time
	// RotatedAt is when a rotated pair was last re-sealed, if ever.
	RotatedAt time.Time
	// Resources, when set, limit every grant minted from the connection
	// to chosen resources, in grant.Grant.Resources form
	// ({"repository":["octo/notes"]}; `pinned connect --only`). "" is no
	// limit.
	Resources string
}

var (
	serviceRe = regexp.MustCompile(`^[a-z][a-z0-9]{1,30}$`)
	tenantRe  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)
)

// CleanViewer makes a provider-reported identity safe to print on one
// terminal line: control and format characters (escape sequences, tabs,
// line breaks, bidi overrides) become "?", invalid UTF-8 too, and it is
// cut to MaxViewerLen bytes on a rune boundary. The provider chooses the
// string; `pinned connect` and `pinned connections` print it.
func CleanViewer(v string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(v, "?") {
		if display.Classify(r) != display.Visible { // the one rule (internal/display)
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > MaxViewerLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Validate checks a connection's fields.
func (c *Connection) Validate() error {
	switch {
	case !serviceRe.MatchString(c.Service):
		return errors.New("service is not a manifest id")
	case c.Cap != CapRead && c.Cap != CapWrite:
		return errors.New(`cap is not "read" or "write"`)
	case c.Kind != grant.KindPAT && c.Kind != grant.KindOAuth:
		return errors.New(`kind is not "pat" or "oauth"`)
	case c.Token == "":
		return errors.New("the token is empty")
	case len(c.Token) > grant.MaxSecretLen || len(c.Refresh) > grant.MaxSecretLen:
		return errors.New("the token or refresh token is too long")
	case c.Refresh != "" && c.Kind != grant.KindOAuth:
		return errors.New("a refresh token needs kind oauth")
	case len(c.User) > grant.MaxUserLen:
		return errors.New("the user part is too long")
	case c.User != "" && c.Kind != grant.KindPAT:
		return errors.New("a user part needs kind pat")
	case c.Tenant != "" && !tenantRe.MatchString(c.Tenant):
		return errors.New("the tenant is not a lower-case DNS label")
	case len(c.Viewer) > MaxViewerLen:
		return errors.New("the viewer identity is too long")
	}
	if c.Resources != "" {
		// The grant's own rules: what a connection holds, its grants seal.
		g := grant.Grant{Resources: c.Resources}
		r := g.ResourceLimits()
		if r == nil || g.SetResources(r) != nil || g.Resources != c.Resources {
			return errors.New("the resource limit is not a grant's resources object")
		}
	}
	if c.TokenExpiresAt != "" {
		if _, err := time.Parse(time.RFC3339, c.TokenExpiresAt); err != nil {
			return errors.New("token_expires_at is not RFC 3339")
		}
	}
	return nil
}

// wire is the sealed plaintext; every secret a string so secret.Secret's
// redaction never reaches the sealed bytes.
type wire struct {
	V           int        `json:"v"`
	Connections []wireConn `json:"connections"`
}

type wireConn struct {
	Service        string `json:"service"`
	Cap            string `json:"cap"`
	Kind           string `json:"kind"`
	Token          string `json:"token"`
	User           string `json:"user,omitempty"`
	Tenant         string `json:"tenant,omitempty"`
	Refresh        string `json:"refresh,omitempty"`
	TokenExpiresAt string `json:"token_expires_at,omitempty"`
	Viewer         string `json:"viewer,omitempty"`
	ConnectedAt    string `json:"connected_at"`
	RotatedAt      string `json:"rotated_at,omitempty"`
	// Resources is Connection.Resources as a JSON object.
	Resources map[string][]string `json:"resources,omitempty"`
}

// Store is the connections of one person in one directory. It is safe for
// concurrent use within a process.
type Store struct {
	dir string
	key *grant.PrivateKey
	now func() time.Time
	mu  sync.Mutex
}

// DefaultDir is $XDG_CONFIG_HOME/pinned (os.UserConfigDir: on Linux
// $XDG_CONFIG_HOME or ~/.config, on macOS ~/Library/Application Support).
func DefaultDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("connstore: no config directory: %w (set XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(d, "pinned"), nil
}

// Open opens the store in dir, creating the directory (0700) and the key
// (0600) when missing. It refuses a key or store file the group or others
// may access.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("connstore: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	kp := filepath.Join(dir, KeyFile)
	if err := checkFile(kp); err != nil {
		return nil, err
	}
	key, err := grant.LoadKeyFile(kp)
	if errors.Is(err, fs.ErrNotExist) {
		// A store without its key is a key lost or not restored: a new key
		// would never open it and would stand in the old one's place.
		if _, serr := os.Lstat(filepath.Join(dir, StoreFile)); serr == nil {
			return nil, fmt.Errorf("connstore: %s is missing but %s exists: restore the key file (from the backup the store came from) or remove the store and connect again", kp, filepath.Join(dir, StoreFile))
		}
		if key, err = grant.GenerateKey(nil); err == nil {
			err = grant.WriteKeyFile(kp, key, false)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connstore: %w", err)
	}
	return &Store{dir: dir, key: key, now: time.Now}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path is the sealed file's path.
func (s *Store) Path() string { return filepath.Join(s.dir, StoreFile) }

// Key is the local key: the store is sealed to its public key, and it is
// the member key rotated pairs are sealed back to.
func (s *Store) Key() *grant.PrivateKey { return s.key }

// List returns every connection, by service id.
func (s *Store) List() ([]Connection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()
}

// Get returns the connection of a service, or ErrNotConnected.
func (s *Store) Get(service string) (Connection, error) {
	all, err := s.List()
	if err != nil {
		return Connection{}, err
	}
	for _, c := range all {
		if c.Service == service {
			return c, nil
		}
	}
	return Connection{}, ErrNotConnected
}

// Put stores c, replacing the service's connection if there is one.
// ConnectedAt is set to now.
func (s *Store) Put(c Connection) error {
	c.Viewer = CleanViewer(c.Viewer)
	c.ConnectedAt = s.now().UTC().Truncate(time.Second)
	c.RotatedAt = time.Time{}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	return s.update(func(all []Connection) ([]Connection, error) {
		all = slices.DeleteFunc(all, func(x Connection) bool { return x.Service == c.Service })
		return append(all, c), nil
	})
}

// Remove deletes a service's connection; ErrNotConnected when there is
// none.
func (s *Store) Remove(service string) error {
	return s.update(func(all []Connection) ([]Connection, error) {
		n := len(all)
		all = slices.DeleteFunc(all, func(x Connection) bool { return x.Service == service })
		if len(all) == n {
			return nil, ErrNotConnected
		}
		return all, nil
	})
}

// PutRotated opens a rotated pair sealed to the store's key (the
// `rotated` of an op result, grant.SealRotated) and re-seals it into the
// service's connection at once: the provider has already retired the old
// refresh token. The cap and viewer are kept; the kind becomes oauth.
func (s *Store) PutRotated(sealed string) error {
	r, err := grant.OpenRotated(sealed, s.key)
	if err != nil {
		return fmt.Errorf("connstore: the rotated pair cannot be opened: %w", err)
	}
	return s.update(func(all []Connection) ([]Connection, error) {
		for i := range all {
			if all[i].Service != r.Service {
				continue
			}
			c := all[i]
			c.Kind, c.Token, c.TokenExpiresAt = r.Kind, r.Access, r.TokenExpiresAt
			if r.Refresh != "" {
				c.Refresh = r.Refresh
			}
			c.RotatedAt = s.now().UTC().Truncate(time.Second)
			if err := c.Validate(); err != nil {
				return nil, err
			}
			all[i] = c
			return all, nil
		}
		return nil, ErrNotConnected
	})
}

// checkDir refuses a store directory that is not a directory, is open to
// group or others, or (unix) is another user's. A symbolic link to the
// directory is followed (dotfile managers link ~/.config/pinned) and the
// target checked.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("connstore: %s is not a directory", dir)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("connstore: %s has mode %04o: group or others can reach it; run `chmod 700 %s`", dir, perm, dir)
	}
	return checkOwner(dir, st)
}

// checkFile refuses a key or store path that is a symbolic link or not a
// regular file, or (unix) another user's; a missing file passes (it is
// created).
func checkFile(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("connstore: %s is not a regular file (a symbolic link?): refusing it; remove it and connect again", path)
	}
	return checkOwner(path, st)
}

func (s *Store) update(f func([]Connection) ([]Connection, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockDir(s.dir)
	if err != nil {
		return err
	}
	defer unlock()
	all, err := s.load()
	if err != nil {
		return err
	}
	all, err = f(all)
	if err != nil {
		return err
	}
	return s.save(all)
}

// load reads and opens the file; a missing file is no connections.
func (s *Store) load() ([]Connection, error) {
	if err := checkFile(s.Path()); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.Path(), os.O_RDONLY|openNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("connstore: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("connstore: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("connstore: %s is not a regular file: refusing it", s.Path())
	}
	if err := checkOwner(s.Path(), st); err != nil {
		return nil, err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("connstore: %s has mode %04o: it is accessible by group or others; run `chmod 600 %s`", s.Path(), perm, s.Path())
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("connstore: %w", err)
	}
	if len(raw) > maxStoreBytes {
		return nil, fmt.Errorf("connstore: %s is too large", s.Path())
	}
	return open(raw, s.key)
}

// errCorrupt is every failure to open the sealed file: the reason never
// holds its bytes.
func errCorrupt(path, why string) error {
	return fmt.Errorf("connstore: %s cannot be read (%s): it was not written by this key; remove it and connect again", path, why)
}

func open(raw []byte, k *grant.PrivateKey) ([]Connection, error) {
	const path = StoreFile
	privB, err := base64.StdEncoding.DecodeString(k.Encode())
	if err != nil || len(privB) != grant.KeySize {
		return nil, errCorrupt(path, "key")
	}
	var priv [grant.KeySize]byte
	copy(priv[:], privB)
	clear(privB)
	pub := [grant.KeySize]byte(k.Public())
	plain, ok := box.OpenAnonymous(nil, raw, &pub, &priv)
	clear(priv[:])
	if !ok {
		return nil, errCorrupt(path, "the box does not open")
	}
	defer clear(plain)
	if _, err := jsonv.Parse(plain); err != nil {
		return nil, errCorrupt(path, "not strict JSON")
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil || w.V != 1 {
		return nil, errCorrupt(path, "not a v1 store")
	}
	out := make([]Connection, 0, len(w.Connections))
	for _, wc := range w.Connections {
		c := Connection{
			Service: wc.Service, Cap: wc.Cap, Kind: wc.Kind, Token: secret.Secret(wc.Token), User: secret.Secret(wc.User), Tenant: wc.Tenant,
			Refresh: secret.Secret(wc.Refresh), TokenExpiresAt: wc.TokenExpiresAt, Viewer: wc.Viewer,
		}
		if wc.Resources != nil {
			g := grant.Grant{}
			if err := g.SetResources(wc.Resources); err != nil || g.Resources == "" {
				return nil, errCorrupt(path, "the resource limit is not a grant's resources object")
			}
			c.Resources = g.Resources
		}
		c.ConnectedAt, _ = time.Parse(time.RFC3339, wc.ConnectedAt)
		if wc.RotatedAt != "" {
			c.RotatedAt, _ = time.Parse(time.RFC3339, wc.RotatedAt)
		}
		if err := c.Validate(); err != nil {
			return nil, errCorrupt(path, err.Error())
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Connection) int { return strings.Compare(a.Service, b.Service) })
	return out, nil
}

// save seals all to the key and replaces the file atomically.
func (s *Store) save(all []Connection) error {
	w := wire{V: 1, Connections: []wireConn{}}
	for _, c := range all {
		wc := wireConn{
			Service: c.Service, Cap: c.Cap, Kind: c.Kind, Token: string(c.Token), User: string(c.User), Tenant: c.Tenant, Refresh: string(c.Refresh),
			TokenExpiresAt: c.TokenExpiresAt, Viewer: c.Viewer, ConnectedAt: c.ConnectedAt.UTC().Format(time.RFC3339),
		}
		if !c.RotatedAt.IsZero() {
			wc.RotatedAt = c.RotatedAt.UTC().Format(time.RFC3339)
		}
		if c.Resources != "" {
			wc.Resources = (&grant.Grant{Resources: c.Resources}).ResourceLimits()
		}
		w.Connections = append(w.Connections, wc)
	}
	slices.SortFunc(w.Connections, func(a, b wireConn) int { return strings.Compare(a.Service, b.Service) })
	plain, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	pub := [grant.KeySize]byte(s.key.Public())
	sealed, err := box.SealAnonymous(nil, plain, &pub, rand.Reader)
	clear(plain)
	if err != nil {
		return fmt.Errorf("connstore: seal: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".connections-*.tmp")
	if err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing to remove
	if err := tmp.Chmod(FileMode); err != nil {
		tmp.Close()
		return fmt.Errorf("connstore: %w", err)
	}
	if _, err := tmp.Write(sealed); err != nil {
		tmp.Close()
		return fmt.Errorf("connstore: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("connstore: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path()); err != nil {
		return fmt.Errorf("connstore: %w", err)
	}
	return nil
}
