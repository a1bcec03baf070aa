// Package grant holds a bot's X25519 keys and the grants members seal to
// them (DESIGN.md, "Grants").
//
// A member gives a bot access to one service by sealing a grant — a small
// JSON document holding the credential, the access level and an expiry —
// to the bot's public key with an anonymous sealed box
// (golang.org/x/crypto/nacl/box SealAnonymous). Only the holder of the
// bot's private key opens it. The sealed grant travels as standard padded
// base64 text.
//
// An anonymous sealed box says nothing about who sealed it: anyone who
// knows the bot's public key can seal a grant to it. A grant's authority
// is the credential inside it, so the rules below bound what a grant can
// do and for how long, whoever made it.
//
// Rules, each with its reason:
//
//   - A grant MUST be exactly the v1 plaintext (see [Grant]): no unknown
//     field, no duplicate key, "v" equal to 1, every required field
//     present. A document this package does not fully understand could
//     carry a restriction it would silently drop.
//   - Every failure to open — not base64, too short, the box does not open,
//     not JSON, an unknown field, a wrong "v", a missing or malformed field
//     — is the one error [ErrInvalid] (errors.Is), so a caller learns
//     nothing about which step failed and maps it to one code
//     (grant_invalid). The reason is kept for logs only ([OpenError]).
//   - A grant without "access" is legacy and MUST be treated as read-only:
//     it predates write access, and its member never consented to writes.
//   - A grant MUST NOT be used after expires_at (RFC 3339) plus
//     [ClockSkew] (30 s): a small allowance for clocks that disagree, no
//     more, so a grant ages out close to when its member said.
//   - A grant whose expires_at is further ahead than the verifier's maximum
//     ([DefaultMaxTTL], 24 h, plus ClockSkew) MUST be refused: a stolen
//     sealed grant must age out, so no grant may live long.
//   - When "op" is present, the grant MUST run that op and nothing else;
//     when "args_sha256" is present too, only with the args whose
//     [CanonicalArgs] hash it is. The consent a member tapped is then
//     exactly what runs.
//   - When "resources" is present, every op MUST stay within the chosen
//     resources of each kind (docs/MANIFEST.md, "Resources"): the
//     sidecar refuses a call naming another before the sandbox runs. A
//     kind the service does not declare fails closed.
//   - The nonce MUST be recorded (see [ReplayCache]) and a grant whose
//     nonce was already seen refused: a grant runs once.
//   - A standing grant ("standing", docs/SECURITY.md, "Standing read
//     grants") is the exception: it runs any number of read ops until it
//     expires or its series is revoked. It MUST have access "read" and no
//     op or args_sha256 binding, and a verifier MUST bound its lifetime
//     by [DefaultStandingMaxTTL] (15 min) or less: its authority ends
//     soon after its member stops renewing it.
//
// The package is public on purpose: the sealed grant is the format other
// clients (a member's device, the web catalog, a bot's own tooling)
// implement, and this is its reference. It may import internal/jsonv,
// secret, golang.org/x/crypto and the standard library only, so
// it sits below everything that uses it (docs/ARCHITECTURE.md).
package grant

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/secret"
)

// Version is the only plaintext version this package seals and opens.
const Version = 1

// ClockSkew is the allowance for clocks that disagree between the member's
// device and the bot: a grant is still accepted up to 30 s after its
// expires_at, and its nonce is remembered that long.
const ClockSkew = 30 * time.Second

// DefaultMaxTTL is the default bound on how far in the future a grant's
// expires_at may lie when it is used.
const DefaultMaxTTL = 24 * time.Hour

// DefaultStandingMaxTTL is the default bound on a standing grant's
// lifetime (expires_at ahead of now): the member's client re-seals it
// well before, while the member is present.
const DefaultStandingMaxTTL = 15 * time.Minute

// Access levels. A grant without access (AccessLegacy) is read-only.
const (
	AccessRead   = "read"
	AccessWrite  = "write"
	AccessLegacy = ""
)

// Credential kinds (Grant.Kind), as host.Credential understands them.
const (
	KindPAT    = "pat"
	KindOAuth  = "oauth"
	KindLegacy = ""
)

// Limits of a grant's fields and of its sealed text.
const (
	// MaxSealedLen bounds the base64 text Open accepts (64 KiB): ample for
	// any token pair, small enough to decode without thought.
	MaxSealedLen = 64 << 10
	// MaxNonceLen bounds the nonce, in bytes.
	MaxNonceLen = 128
	// MinNonceLen is the shortest nonce accepted: 16 bytes, as NewNonce's
	// 22 characters of base64 carry 128 bits.
	MinNonceLen = 16
	// MaxSecretLen bounds secret and refresh, in bytes.
	MaxSecretLen = 16 << 10
	// MaxUserLen bounds user, in bytes.
	MaxUserLen = 1 << 10
)

// Grant is the v1 plaintext (DESIGN.md, "Grants") plus the optional
// bindings Op and ArgsSHA256. On the wire:
//
//	{"v":1, "service":"github", "access":"write", "kind":"pat",
//	 "secret":"…", "refresh":"", "token_expires_at":"",
//	 "expires_at":"2026-11-30T10:02:00Z", "nonce":"…", "member_key":"…",
//	 "op":"create_issue", "args_sha256":"<64 lower-case hex>",
//	 "resources":{"repository":["octo/notes"]}}
//
// Required: v, service, secret, expires_at, nonce. The rest is optional;
// an empty string is the same as an absent member.
type Grant struct {
	// Service is the manifest id the grant is for ("github").
	Service string
	// Access is "read", "write", or "" (legacy: read-only).
	Access string
	// Kind is the credential kind: "pat", "oauth" or "" (legacy, sent as
	// the manifest's scheme says).
	Kind string
	// Secret is the access token.
	Secret secret.Secret
	// User is the first part of a two-part credential (an account email
	// of HTTP Basic, a key beside a token), guarded like Secret; empty for
	// a one-part credential. At most MaxUserLen bytes.
	User secret.Secret
	// Tenant is the connection's tenant label for a service whose host is
	// per connection ("acme" of acme.atlassian.net): a lower-case DNS
	// label, sealed with the credential so no op arg can change it.
	Tenant string
	// Refresh is the refresh token of an expiring pair, if any.
	Refresh secret.Secret
	// TokenExpiresAt is when Secret expires (RFC 3339), if it does.
	TokenExpiresAt string
	// ExpiresAt is when the grant itself expires.
	ExpiresAt time.Time
	// Nonce makes the grant single-use: printable ASCII, 16 to 128 bytes.
	Nonce string
	// MemberKey is the member's X25519 public key (base64), to which a
	// rotated token pair is sealed back; empty when the member gave none.
	MemberKey string
	// Op, when set, is the only op the grant runs.
	Op string
	// ArgsSHA256, when set, is the lower-case hex SHA-256 of the only args
	// (in [CanonicalArgs] form) the grant runs Op with. It requires Op.
	ArgsSHA256 string
	// ManifestSHA256, when set, is the lower-case hex SHA-256 of the
	// manifest file the member reviewed (GET /v1/registry's
	// manifest_sha256): a sidecar whose own manifest of Service has other
	// bytes refuses the grant (manifest_drift) and runs nothing.
	ManifestSHA256 string
	// Flows, on a research grant, are the cross-service flows the
	// member's research consent allowed, comma-separated, each "from:to"
	// (two service ids): "dnsimple:github,stripe:github". A session may
	// allow a flow only when the grants of both its services seal it
	// (SealsFlow). At most MaxFlows. Sealed as the JSON array "flows".
	Flows string
	// Standing, when set, makes the grant a standing read grant: the
	// series id (printable ASCII, MinNonceLen to MaxNonceLen bytes) that
	// every renewal of it carries, by which the member revokes it. A
	// standing grant runs the service's read ops any number of times
	// until it expires; it requires Access "read" and refuses Op and
	// ArgsSHA256. Each renewal still has a fresh Nonce.
	Standing string
	// Resources, when set, limit the grant to chosen resources: by kind
	// (a manifest's resources name, "repository"), the resource names
	// allowed ("octo/notes"). Each kind has 1 to MaxResourceValues
	// distinct values of 1 to MaxResourceLen bytes of UTF-8 without
	// control characters; at most MaxResourceKinds kinds. It is kept as
	// compact JSON with sorted kinds, {"repository":["octo/notes"]}, so
	// a Grant stays comparable; set it with SetResources, read it with
	// Limited. "" is no limit. Sealed as the JSON object "resources".
	Resources string
}

// Limits of a grant's Resources.
const (
	MaxResourceKinds  = 4
	MaxResourceValues = 256
	MaxResourceLen    = 512
)

// SetResources sets Resources from a map (nil or empty: no limit),
// refusing what Validate would.
func (g *Grant) SetResources(r map[string][]string) error {
	if len(r) == 0 {
		g.Resources = ""
		return nil
	}
	if err := validResources(r); err != nil {
		return fmt.Errorf("grant: %w", err)
	}
	b, err := json.Marshal(r) // map keys sorted
	if err != nil {
		return fmt.Errorf("grant: resources: %w", err)
	}
	g.Resources = string(b)
	return nil
}

// ResourceLimits returns Resources as a map: nil when the grant has no
// limit, or when Resources is not what SetResources writes.
func (g *Grant) ResourceLimits() map[string][]string {
	if g.Resources == "" {
		return nil
	}
	var r map[string][]string
	if err := json.Unmarshal([]byte(g.Resources), &r); err != nil {
		return nil
	}
	return r
}

// Limited returns the resource names the grant allows of kind, and
// whether it limits that kind at all.
func (g *Grant) Limited(kind string) ([]string, bool) {
	v, ok := g.ResourceLimits()[kind]
	return v, ok
}

// MaxFlows bounds a grant's Flows.
const MaxFlows = 64

// flowList splits Flows ("" is none).
func (g *Grant) flowList() []string {
	if g.Flows == "" {
		return nil
	}
	return strings.Split(g.Flows, ",")
}

// SealsFlow reports whether the grant's Flows allow values service from
// returned to go to service to.
func (g *Grant) SealsFlow(from, to string) bool {
	for _, f := range g.flowList() {
		if f == from+":"+to {
			return true
		}
	}
	return false
}

// wire is the plaintext JSON; every field a string so Secret's redaction
// never reaches the sealed bytes.
type wire struct {
	V              int                 `json:"v"`
	Service        string              `json:"service"`
	Access         string              `json:"access,omitempty"`
	Kind           string              `json:"kind,omitempty"`
	Secret         string              `json:"secret"`
	User           string              `json:"user,omitempty"`
	Tenant         string              `json:"tenant,omitempty"`
	Refresh        string              `json:"refresh,omitempty"`
	TokenExpiresAt string              `json:"token_expires_at,omitempty"`
	ExpiresAt      string              `json:"expires_at"`
	Nonce          string              `json:"nonce"`
	MemberKey      string              `json:"member_key,omitempty"`
	Op             string              `json:"op,omitempty"`
	ArgsSHA256     string              `json:"args_sha256,omitempty"`
	Flows          []string            `json:"flows,omitempty"`
	Resources      map[string][]string `json:"resources,omitempty"`
	ManifestSHA256 string              `json:"manifest_sha256,omitempty"`
	Standing       string              `json:"standing,omitempty"`
}

// EffectiveAccess is the access the grant confers: "write" for a write
// grant, "read" for a read or legacy grant.
func (g *Grant) EffectiveAccess() string {
	if g.Access == AccessWrite {
		return AccessWrite
	}
	return AccessRead
}

// Allows reports whether the grant's access covers an op of the given
// access level ("read" or "write"). A legacy grant allows reads only; an
// unknown level is never allowed.
func (g *Grant) Allows(opAccess string) bool {
	switch opAccess {
	case AccessRead:
		return true
	case AccessWrite:
		return g.Access == AccessWrite
	}
	return false
}

var (
	serviceRe = regexp.MustCompile(`^[a-z][a-z0-9]{1,30}$`)
	kindRe    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	opRe      = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)
	sha256Re  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	tenantRe  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)
)

// Validate checks the plaintext rules: the fields Open requires and the
// form of each. Seal refuses a grant Validate refuses, so whatever Seal
// produces, Open accepts.
func (g *Grant) Validate() error {
	switch {
	case !serviceRe.MatchString(g.Service):
		return errors.New("service is not a manifest id")
	case g.Access != AccessRead && g.Access != AccessWrite && g.Access != AccessLegacy:
		return errors.New(`access is not "read" or "write"`)
	case g.Kind != KindPAT && g.Kind != KindOAuth && g.Kind != KindLegacy:
		return errors.New(`kind is not "pat" or "oauth"`)
	case g.Secret == "":
		return errors.New("secret is missing")
	case len(g.Secret) > MaxSecretLen || len(g.Refresh) > MaxSecretLen:
		return errors.New("secret or refresh is too long")
	case len(g.User) > MaxUserLen || !printable(string(g.User)):
		return fmt.Errorf("user is not at most %d printable ASCII bytes", MaxUserLen)
	case g.Tenant != "" && !tenantRe.MatchString(g.Tenant):
		return errors.New("tenant is not a lower-case DNS label")
	case g.ExpiresAt.IsZero():
		return errors.New("expires_at is missing")
	case len(g.Nonce) < MinNonceLen || len(g.Nonce) > MaxNonceLen || !printable(g.Nonce):
		return fmt.Errorf("nonce is not %d to %d printable ASCII bytes", MinNonceLen, MaxNonceLen)
	case g.Op != "" && !opRe.MatchString(g.Op):
		return errors.New("op is not an op name")
	case g.ArgsSHA256 != "" && !sha256Re.MatchString(g.ArgsSHA256):
		return errors.New("args_sha256 is not 64 lower-case hex digits")
	case g.ArgsSHA256 != "" && g.Op == "":
		return errors.New("args_sha256 needs op")
	case g.ManifestSHA256 != "" && !sha256Re.MatchString(g.ManifestSHA256):
		return errors.New("manifest_sha256 is not 64 lower-case hex digits")
	case g.Standing != "" && (len(g.Standing) < MinNonceLen || len(g.Standing) > MaxNonceLen || !printable(g.Standing)):
		return fmt.Errorf("standing is not %d to %d printable ASCII bytes", MinNonceLen, MaxNonceLen)
	case g.Standing != "" && g.Access != AccessRead:
		return errors.New(`a standing grant must have access "read": writes stay interactive`)
	case g.Standing != "" && (g.Op != "" || g.ArgsSHA256 != ""):
		return errors.New("a standing grant is not bound to an op or args")
	case len(g.flowList()) > MaxFlows:
		return fmt.Errorf("more than %d flows", MaxFlows)
	}
	for _, f := range g.flowList() {
		from, to, ok := strings.Cut(f, ":")
		if !ok || !serviceRe.MatchString(from) || !serviceRe.MatchString(to) || from == to {
			return errors.New(`a flow is not "from:to" of two service ids`)
		}
	}
	if g.Resources != "" {
		r := g.ResourceLimits()
		if r == nil {
			return errors.New("resources is not a JSON object of kind to names")
		}
		if err := validResources(r); err != nil {
			return err
		}
		if b, _ := json.Marshal(r); string(b) != g.Resources {
			return errors.New("resources is not in SetResources form")
		}
	}
	if g.TokenExpiresAt != "" {
		if _, err := time.Parse(time.RFC3339, g.TokenExpiresAt); err != nil {
			return errors.New("token_expires_at is not RFC 3339")
		}
	}
	if g.MemberKey != "" {
		if _, err := ParsePublicKey(g.MemberKey); err != nil {
			return errors.New("member_key is not a public key")
		}
	}
	return nil
}

// validResources checks a grant's Resources (see Grant.Resources).
func validResources(r map[string][]string) error {
	if len(r) == 0 || len(r) > MaxResourceKinds {
		return fmt.Errorf("resources has %d kinds; want 1 to %d", len(r), MaxResourceKinds)
	}
	for kind, values := range r {
		if !kindRe.MatchString(kind) {
			return errors.New("a resources kind is not a resource name")
		}
		if len(values) == 0 || len(values) > MaxResourceValues {
			return fmt.Errorf("resources.%s has %d values; want 1 to %d", kind, len(values), MaxResourceValues)
		}
		seen := make(map[string]bool, len(values))
		for _, v := range values {
			switch {
			case v == "" || len(v) > MaxResourceLen:
				return fmt.Errorf("a resources.%s value is not 1 to %d bytes", kind, MaxResourceLen)
			case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
				return fmt.Errorf("a resources.%s value is not UTF-8 text without control characters", kind)
			case seen[v]:
				return fmt.Errorf("a resources.%s value is listed twice", kind)
			}
			seen[v] = true
		}
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// NewNonce returns 16 random bytes as unpadded base64url (22 characters).
func NewNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Seal validates g and seals it to the bot's public key with an anonymous
// sealed box, returning standard padded base64. random nil means
// crypto/rand. A missing nonce is filled in with NewNonce.
func Seal(g *Grant, to PublicKey, random io.Reader) (string, error) {
	c := *g
	if c.Nonce == "" {
		n, err := NewNonce()
		if err != nil {
			return "", fmt.Errorf("grant: nonce: %w", err)
		}
		c.Nonce = n
	}
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("grant: %w", err)
	}
	return sealWire(wire{
		V: Version, Service: c.Service, Access: c.Access, Kind: c.Kind,
		Secret: string(c.Secret), User: string(c.User), Tenant: c.Tenant, Refresh: string(c.Refresh), TokenExpiresAt: c.TokenExpiresAt,
		ExpiresAt: c.ExpiresAt.UTC().Format(time.RFC3339), Nonce: c.Nonce, MemberKey: c.MemberKey,
		Op: c.Op, ArgsSHA256: c.ArgsSHA256, Flows: c.flowList(), Resources: c.ResourceLimits(), ManifestSHA256: c.ManifestSHA256,
		Standing: c.Standing,
	}, to, random, "grant")
}

// sealWire marshals a wire struct (strings and ints only) and seals it to
// to with an anonymous sealed box, returning standard padded base64; the
// plaintext is cleared. random nil means crypto/rand. what prefixes errors.
func sealWire(w any, to PublicKey, random io.Reader, what string) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	plain, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("grant: %s: %w", what, err)
	}
	pub := [KeySize]byte(to)
	sealed, err := box.SealAnonymous(nil, plain, &pub, random)
	clear(plain)
	if err != nil {
		return "", fmt.Errorf("grant: seal %s: %w", what, err)
	}
	return base64.StdEncoding.EncodeToString(sealed), nil
}

// openWire opens a sealed box made by sealWire with k and decodes its
// plaintext into w (a pointer to a wire struct): strict JSON first
// (encoding/json keeps the last of duplicate keys and replaces invalid
// UTF-8, both ways to read one box two ways), then no unknown field. The
// plaintext is cleared. Every failure is ErrInvalid with a fixed reason;
// what names the object in the decode reason.
func openWire(sealed string, k *PrivateKey, w any, what string) error {
	if k == nil {
		return invalid("no private key")
	}
	if len(sealed) > MaxSealedLen {
		return invalid("too long")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(sealed)
	if err != nil {
		return invalid("not base64")
	}
	if len(raw) <= box.AnonymousOverhead {
		return invalid("too short")
	}
	pub, priv := [KeySize]byte(k.pub), k.priv
	plain, ok := box.OpenAnonymous(nil, raw, &pub, &priv)
	clear(priv[:])
	if !ok {
		return invalid("the box does not open with this key")
	}
	defer clear(plain)
	if _, err := jsonv.Parse(plain); err != nil {
		return invalid("not strict JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	if err := dec.Decode(w); err != nil {
		return invalid("not a v1 " + what + " (unknown field or wrong type)")
	}
	return nil
}

// ErrInvalid is the one error for every failure to open a grant. Test for
// it with errors.Is; the *OpenError Open returns also says why, for logs.
const ErrInvalid = constError("grant: cannot be opened")

// OpenError is what Open returns: it is ErrInvalid (errors.Is) and carries
// the reason for logs. The reason is a fixed phrase, never text from the
// grant, and MUST NOT be sent to callers.
type OpenError struct {
	// Reason is the step that failed, a fixed phrase ("not base64", …).
	Reason string
}

// Error is ErrInvalid's text, ": " and the reason (for logs).
func (e *OpenError) Error() string { return ErrInvalid.Error() + ": " + e.Reason }

// Is reports whether target is ErrInvalid, so errors.Is(err, ErrInvalid)
// holds for every OpenError.
func (e *OpenError) Is(target error) bool { return target == ErrInvalid }

func invalid(reason string) error { return &OpenError{Reason: reason} }

// Open decodes a sealed grant, opens it with the bot's private key and
// checks the plaintext (see Validate). Every failure is ErrInvalid. Open
// does not check expiry, access, bindings or replay: see CheckTime,
// Allows, CheckBinding and ReplayCache.
func Open(sealed string, k *PrivateKey) (*Grant, error) {
	var w wire
	if err := openWire(sealed, k, &w, "grant object"); err != nil {
		return nil, err
	}
	if w.V != Version {
		return nil, invalid("wrong version")
	}
	if w.ExpiresAt == "" {
		return nil, invalid("expires_at is missing")
	}
	exp, err := time.Parse(time.RFC3339, w.ExpiresAt)
	if err != nil {
		return nil, invalid("expires_at is not RFC 3339")
	}
	for _, f := range w.Flows {
		if f == "" || strings.Contains(f, ",") { // one flow an element: one reading
			return nil, invalid(`a flow is not "from:to" of two service ids`)
		}
	}
	g := &Grant{
		Service: w.Service, Access: w.Access, Kind: w.Kind,
		Secret: secret.Secret(w.Secret), User: secret.Secret(w.User), Tenant: w.Tenant, Refresh: secret.Secret(w.Refresh), TokenExpiresAt: w.TokenExpiresAt,
		ExpiresAt: exp, Nonce: w.Nonce, MemberKey: w.MemberKey, Op: w.Op, ArgsSHA256: w.ArgsSHA256, Flows: strings.Join(w.Flows, ","), ManifestSHA256: w.ManifestSHA256,
		Standing: w.Standing,
	}
	if w.Resources != nil {
		if err := validResources(w.Resources); err != nil {
			return nil, invalid(err.Error())
		}
		b, _ := json.Marshal(w.Resources)
		g.Resources = string(b)
	}
	if err := g.Validate(); err != nil {
		return nil, invalid(err.Error())
	}
	return g, nil
}

// Errors of CheckTime and CheckBinding.
const (
	// ErrExpired: now is past expires_at plus ClockSkew.
	ErrExpired = constError("grant: expired")
	// ErrTooLong: expires_at is further ahead than the maximum TTL plus
	// ClockSkew.
	ErrTooLong = constError("grant: expires too far in the future")
	// ErrOpMismatch: the grant is bound to another op.
	ErrOpMismatch = constError("grant: bound to another op")
	// ErrArgsMismatch: the grant is bound to other args.
	ErrArgsMismatch = constError("grant: bound to other args")
)

// constError is an error that is a constant: the package's errors are
// constants so that no package of a program can replace one (assigning
// nil to a variable would make the check that returns it pass).
type constError string

func (e constError) Error() string { return string(e) }

// CheckTime refuses a grant that expired (ErrExpired) or that expires more
// than maxTTL from now (ErrTooLong), each with ClockSkew allowed. maxTTL
// <= 0 means DefaultMaxTTL.
func (g *Grant) CheckTime(now time.Time, maxTTL time.Duration) error {
	if maxTTL <= 0 {
		maxTTL = DefaultMaxTTL
	}
	if now.After(g.ExpiresAt.Add(ClockSkew)) {
		return ErrExpired
	}
	if g.ExpiresAt.Sub(now) > maxTTL+ClockSkew {
		return ErrTooLong
	}
	return nil
}

// CheckBinding refuses an op or args the grant is not bound to. argsHash
// is ArgsSHA256 of the call's args (only consulted when the grant binds
// args). A grant without bindings allows any op and args (subject to
// Allows).
func (g *Grant) CheckBinding(op, argsHash string) error {
	if g.Op != "" && g.Op != op {
		return ErrOpMismatch
	}
	if g.ArgsSHA256 != "" && g.ArgsSHA256 != argsHash {
		return ErrArgsMismatch
	}
	return nil
}

// IsStanding reports whether g is a standing read grant.
func (g *Grant) IsStanding() bool { return g.Standing != "" }

// StandingScope is the hex SHA-256 of what a standing grant's series
// allows: service, access, kind, tenant, member key, manifest digest,
// flows and resources (not the expiry, nonce or tokens, which renewals
// change). A verifier binds a series to its first scope and refuses a
// renewal whose scope differs: a renewal extends time, never reach.
func (g *Grant) StandingScope() string {
	h := sha256.New()
	for _, f := range []string{g.Service, g.Access, g.Kind, g.Tenant, g.MemberKey, g.ManifestSHA256, g.Flows, g.Resources} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BindsArgs reports whether the grant is bound to exact args.
func (g *Grant) BindsArgs() bool { return g.ArgsSHA256 != "" }
