package grant

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/secret"
)

// fixedKey is the key FuzzOpen and its seed corpus use: its private half
// is 32 bytes of 0x42.
func fixedKey(t testing.TB) *PrivateKey {
	t.Helper()
	k, err := ParsePrivateKey(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKey(t testing.TB) *PrivateKey {
	t.Helper()
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func validGrant() *Grant {
	return &Grant{
		Service: "github", Access: AccessWrite, Kind: KindPAT,
		Secret:    "ghp_fake_pinned_github_token_000000000000",
		ExpiresAt: t0.Add(2 * time.Minute), Nonce: "nonce-0123456789abcdef",
	}
}

// sealRaw seals arbitrary plaintext, bypassing Seal's validation.
func sealRaw(t testing.TB, plain string, to PublicKey) string {
	t.Helper()
	pub := [KeySize]byte(to)
	b, err := box.SealAnonymous(nil, []byte(plain), &pub, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestPublicKeyText(t *testing.T) {
	k := newKey(t)
	s := k.Public().String()
	if len(s) != 44 {
		t.Fatalf("public key text %q has %d characters, want 44", s, len(s))
	}
	got, err := ParsePublicKey(" " + s + "\n")
	if err != nil || got != k.Public() {
		t.Fatalf("ParsePublicKey(%q) = %v, %v; want the key back", s, got, err)
	}
	tests := []struct {
		name string
		in   string
	}{
		{name: "empty", in: ""},
		{name: "not base64", in: "not a key at all, not a key at all, not a k!"},
		{name: "31 bytes", in: base64.StdEncoding.EncodeToString(make([]byte, 31))},
		{name: "33 bytes", in: base64.StdEncoding.EncodeToString(make([]byte, 33))},
		{name: "unpadded", in: strings.TrimRight(s, "=")},
		{name: "url alphabet", in: base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))},
		{name: "all zeros (low order)", in: base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{name: "one (low order)", in: base64.StdEncoding.EncodeToString(append([]byte{1}, make([]byte, 31)...))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParsePublicKey(tt.in); err == nil {
				t.Fatalf("ParsePublicKey(%q) accepted it", tt.in)
			}
		})
	}
}

func TestPrivateKeyText(t *testing.T) {
	k := newKey(t)
	enc := k.Encode()
	back, err := ParsePrivateKey(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back.Public() != k.Public() || back.Encode() != enc {
		t.Fatal("private key does not round-trip through its text form")
	}
	// Fixed vector: the public key of the scalar 9 (clamped) is a constant.
	fk := fixedKey(t)
	if fk.Public().String() != fixedKey(t).Public().String() {
		t.Fatal("public key derivation is not deterministic")
	}
	for _, verb := range []string{"%v", "%s", "%+v", "%#v", "%q", "%x"} {
		out := fmt.Sprintf(verb, k)
		if strings.Contains(out, enc) || out != "[private key]" {
			t.Errorf("Sprintf(%q, key) = %q, want [private key]", verb, out)
		}
	}
	if _, err := ParsePrivateKey("short"); err == nil || strings.Contains(err.Error(), "short") {
		t.Fatalf("ParsePrivateKey(short) = %v; want an error that does not echo the input", err)
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bot.key")
	k := newKey(t)
	if err := WriteKeyFile(path, k, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if string(data) != k.Encode()+"\n" {
		t.Fatalf("key file holds %q, want one line of base64", data)
	}
	got, err := LoadKeyFile(path)
	if err != nil || got.Public() != k.Public() {
		t.Fatalf("LoadKeyFile = %v, %v", got, err)
	}
	if err := WriteKeyFile(path, newKey(t), false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("WriteKeyFile over an existing key = %v, want a refusal", err)
	}
	if got, _ := LoadKeyFile(path); got.Public() != k.Public() {
		t.Fatal("a refused overwrite changed the key file")
	}

	// Overwrite resets the mode of a file that was too open.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	k2 := newKey(t)
	if err := WriteKeyFile(path, k2, true); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("overwritten key file mode %04o, want 0600", st.Mode().Perm())
	}

	tests := []struct {
		name    string
		mode    os.FileMode
		content string
		want    string
	}{
		{name: "group readable", mode: 0o640, content: k.Encode(), want: "mode 0640: it is accessible by group or others"},
		{name: "world readable", mode: 0o644, content: k.Encode(), want: "chmod 600"},
		{name: "group writable", mode: 0o620, content: k.Encode(), want: "mode 0620"},
		{name: "owner only read", mode: 0o400, content: k.Encode() + "\n", want: ""},
		{name: "garbage", mode: 0o600, content: "hello", want: "44 characters of standard base64"},
		{name: "too large", mode: 0o600, content: strings.Repeat("A", 2000), want: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadKeyFile(p)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("LoadKeyFile: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadKeyFile = %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), k.Encode()) {
				t.Fatal("the error repeats the key")
			}
		})
	}
	if _, err := LoadKeyFile(dir); err == nil {
		t.Fatal("LoadKeyFile accepted a directory")
	}
	if _, err := LoadKeyFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("LoadKeyFile accepted a missing file")
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	k := newKey(t)
	member := newKey(t)
	tests := []struct {
		name string
		g    *Grant
	}{
		{name: "write pat", g: validGrant()},
		{name: "legacy", g: &Grant{Service: "linear", Secret: "lin_api_x", ExpiresAt: t0, Nonce: "0123456789abcdef"}},
		{name: "everything", g: &Grant{
			Service: "github", Access: AccessRead, Kind: KindOAuth, Secret: "ghu_a", Refresh: "ghr_b",
			TokenExpiresAt: "2026-11-30T11:00:00Z", ExpiresAt: t0, Nonce: strings.Repeat("n", MaxNonceLen),
			MemberKey: member.Public().String(), Op: "create_issue", ArgsSHA256: strings.Repeat("ab", 32),
		}},
		{name: "two parts and a tenant", g: &Grant{Service: "jira", Access: AccessWrite, Kind: KindPAT, Secret: "ATATTx", User: "pinned-tester@example.org",
			Tenant: "acme-fake", ExpiresAt: t0, Nonce: "0123456789abcdef"}},
		{name: "research flows", g: &Grant{Service: "github", Access: AccessRead, Secret: "ghp_a", ExpiresAt: t0,
			Nonce: "0123456789abcdef", Flows: "dnsimple:github,stripe:github"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, err := Seal(tt.g, k.Public(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sealed, string(tt.g.Secret)) {
				t.Fatal("the sealed text holds the secret")
			}
			got, err := Open(sealed, k)
			if err != nil {
				t.Fatal(err)
			}
			if *got != *tt.g {
				t.Fatalf("Open = %+v, want %+v", *got, *tt.g)
			}
			// Sealed to one bot, another cannot open it.
			if _, err := Open(sealed, newKey(t)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("another key opened the grant: %v", err)
			}
		})
	}
	// A missing nonce is filled in.
	g := validGrant()
	g.Nonce = ""
	sealed, err := Seal(g, k.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(sealed, k)
	if err != nil || len(got.Nonce) != 22 {
		t.Fatalf("Open = %+v, %v; want a 22-character nonce", got, err)
	}
}

func TestSealRefuses(t *testing.T) {
	k := newKey(t)
	tests := []struct {
		name string
		edit func(*Grant)
		want string
	}{
		{name: "no service", edit: func(g *Grant) { g.Service = "" }, want: "service"},
		{name: "bad access", edit: func(g *Grant) { g.Access = "admin" }, want: "access"},
		{name: "bad kind", edit: func(g *Grant) { g.Kind = "basic" }, want: "kind"},
		{name: "no secret", edit: func(g *Grant) { g.Secret = "" }, want: "secret is missing"},
		{name: "no expiry", edit: func(g *Grant) { g.ExpiresAt = time.Time{} }, want: "expires_at"},
		{name: "short nonce", edit: func(g *Grant) { g.Nonce = "short" }, want: "nonce"},
		{name: "nonce with space", edit: func(g *Grant) { g.Nonce = "nonce 0123456789abcdef" }, want: "nonce"},
		{name: "args hash without op", edit: func(g *Grant) { g.ArgsSHA256 = strings.Repeat("0", 64) }, want: "needs op"},
		{name: "upper-case hash", edit: func(g *Grant) { g.Op = "x"; g.ArgsSHA256 = strings.Repeat("A", 64) }, want: "args_sha256"},
		{name: "bad op", edit: func(g *Grant) { g.Op = "Create-Issue" }, want: "op"},
		{name: "bad member key", edit: func(g *Grant) { g.MemberKey = "abc" }, want: "member_key"},
		{name: "bad token expiry", edit: func(g *Grant) { g.TokenExpiresAt = "tomorrow" }, want: "token_expires_at"},
		{name: "a flow without a colon", edit: func(g *Grant) { g.Flows = "dnsimple-github" }, want: "flow"},
		{name: "a flow to itself", edit: func(g *Grant) { g.Flows = "github:github" }, want: "flow"},
		{name: "a flow naming no service id", edit: func(g *Grant) { g.Flows = "dnsimple:GitHub" }, want: "flow"},
		{name: "an empty flow", edit: func(g *Grant) { g.Flows = "dnsimple:github," }, want: "flow"},
		{name: "a tenant with a dot", edit: func(g *Grant) { g.Tenant = "acme.evil" }, want: "tenant"},
		{name: "an upper-case tenant", edit: func(g *Grant) { g.Tenant = "Acme" }, want: "tenant"},
		{name: "a tenant with a port", edit: func(g *Grant) { g.Tenant = "acme:8443" }, want: "tenant"},
		{name: "a user part with a line break", edit: func(g *Grant) { g.User = "a\r\nb" }, want: "user"},
		{name: "a user part too long", edit: func(g *Grant) { g.User = secret.Secret(strings.Repeat("u", MaxUserLen+1)) }, want: "user"},
		{name: "too many flows", edit: func(g *Grant) { g.Flows = strings.Repeat("ab:cd,", MaxFlows) + "ab:cd" }, want: "flows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := validGrant()
			tt.edit(g)
			_, err := Seal(g, k.Public(), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Seal = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	k := newKey(t)
	pub := k.Public()
	good := `"service":"github","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef"`
	tests := []struct {
		name   string
		sealed string
		reason string
	}{
		{name: "empty", sealed: "", reason: "too short"},
		{name: "not base64", sealed: "not base64!", reason: "not base64"},
		{name: "unpadded base64", sealed: base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 100)), reason: "not base64"},
		{name: "too short", sealed: base64.StdEncoding.EncodeToString(make([]byte, box.AnonymousOverhead)), reason: "too short"},
		{name: "too long", sealed: strings.Repeat("A", MaxSealedLen+4), reason: "too long"},
		{name: "random bytes", sealed: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 200)), reason: "does not open"},
		{name: "sealed to another bot", sealed: sealRaw(t, `{"v":1,`+good+`}`, newKey(t).Public()), reason: "does not open"},
		{name: "not JSON", sealed: sealRaw(t, `hello`, pub), reason: "not strict JSON"},
		{name: "JSON array", sealed: sealRaw(t, `[1]`, pub), reason: "not a v1 grant"},
		{name: "trailing data", sealed: sealRaw(t, `{"v":1,`+good+`} {}`, pub), reason: "not strict JSON"},
		{name: "duplicate key", sealed: sealRaw(t, `{"v":1,"access":"read","access":"write",`+good+`}`, pub), reason: "not strict JSON"},
		{name: "unknown field", sealed: sealRaw(t, `{"v":1,"scope":"all",`+good+`}`, pub), reason: "unknown field"},
		{name: "wrong type", sealed: sealRaw(t, `{"v":"1",`+good+`}`, pub), reason: "wrong type"},
		{name: "wrong version", sealed: sealRaw(t, `{"v":2,`+good+`}`, pub), reason: "wrong version"},
		{name: "missing version", sealed: sealRaw(t, `{`+good+`}`, pub), reason: "wrong version"},
		{name: "missing secret", sealed: sealRaw(t, `{"v":1,"service":"github","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef"}`, pub), reason: "secret is missing"},
		{name: "missing expiry", sealed: sealRaw(t, `{"v":1,"service":"github","secret":"s","nonce":"0123456789abcdef"}`, pub), reason: "expires_at is missing"},
		{name: "expiry not RFC 3339", sealed: sealRaw(t, `{"v":1,"service":"github","secret":"s","expires_at":"30/11/2026","nonce":"0123456789abcdef"}`, pub), reason: "RFC 3339"},
		{name: "missing nonce", sealed: sealRaw(t, `{"v":1,"service":"github","secret":"s","expires_at":"2026-11-30T10:02:00Z"}`, pub), reason: "nonce"},
		{name: "missing service", sealed: sealRaw(t, `{"v":1,"secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef"}`, pub), reason: "service"},
		{name: "unknown access", sealed: sealRaw(t, `{"v":1,"access":"admin",`+good+`}`, pub), reason: "access"},
		{name: "invalid UTF-8", sealed: sealRaw(t, "{\"v\":1,\"kind\":\"\xff\","+good+"}", pub), reason: "not strict JSON"},
		{name: "two flows in one element", sealed: sealRaw(t, `{"v":1,"flows":["dnsimple:github,stripe:github"],`+good+`}`, pub), reason: "flow"},
		{name: "an empty flow", sealed: sealRaw(t, `{"v":1,"flows":[""],`+good+`}`, pub), reason: "flow"},
		{name: "a flow to itself", sealed: sealRaw(t, `{"v":1,"flows":["github:github"],`+good+`}`, pub), reason: "flow"},
		{name: "flows as a string", sealed: sealRaw(t, `{"v":1,"flows":"dnsimple:github",`+good+`}`, pub), reason: "wrong type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Open(tt.sealed, k)
			if g != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open = %+v, %v; want ErrInvalid", g, err)
			}
			var oe *OpenError
			if !errors.As(err, &oe) || !strings.Contains(oe.Reason, tt.reason) {
				t.Fatalf("Open reason = %v, want one containing %q", err, tt.reason)
			}
		})
	}
	if _, err := Open(sealRaw(t, `{"v":1,`+good+`}`, pub), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open without a key = %v", err)
	}
	// The control: the same plaintext opens.
	if _, err := Open(sealRaw(t, `{"v":1,`+good+`}`, pub), k); err != nil {
		t.Fatalf("control grant refused: %v", err)
	}
}

func TestGrantChecks(t *testing.T) {
	now := t0
	tests := []struct {
		name   string
		expiry time.Time
		maxTTL time.Duration
		want   error
	}{
		{name: "fresh", expiry: now.Add(2 * time.Minute), want: nil},
		{name: "just expired, within skew", expiry: now.Add(-29 * time.Second), want: nil},
		{name: "at the skew edge", expiry: now.Add(-ClockSkew), want: nil},
		{name: "past the skew", expiry: now.Add(-ClockSkew - time.Second), want: ErrExpired},
		{name: "long expired", expiry: now.Add(-24 * time.Hour), want: ErrExpired},
		{name: "24h ahead", expiry: now.Add(24 * time.Hour), want: nil},
		{name: "24h plus skew ahead", expiry: now.Add(24*time.Hour + ClockSkew), want: nil},
		{name: "over 24h ahead", expiry: now.Add(24*time.Hour + ClockSkew + time.Second), want: ErrTooLong},
		{name: "custom max", expiry: now.Add(11 * time.Minute), maxTTL: 10 * time.Minute, want: ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := validGrant()
			g.ExpiresAt = tt.expiry
			if got := g.CheckTime(now, tt.maxTTL); got != tt.want {
				t.Fatalf("CheckTime = %v, want %v", got, tt.want)
			}
		})
	}

	access := []struct {
		name          string
		grant, op     string
		want          bool
		wantEffective string
	}{
		{name: "read grant, read op", grant: AccessRead, op: AccessRead, want: true, wantEffective: "read"},
		{name: "read grant, write op", grant: AccessRead, op: AccessWrite, want: false, wantEffective: "read"},
		{name: "legacy grant, read op", grant: AccessLegacy, op: AccessRead, want: true, wantEffective: "read"},
		{name: "legacy grant, write op", grant: AccessLegacy, op: AccessWrite, want: false, wantEffective: "read"},
		{name: "write grant, write op", grant: AccessWrite, op: AccessWrite, want: true, wantEffective: "write"},
		{name: "write grant, read op", grant: AccessWrite, op: AccessRead, want: true, wantEffective: "write"},
		{name: "unknown op access", grant: AccessWrite, op: "admin", want: false, wantEffective: "write"},
	}
	for _, tt := range access {
		t.Run(tt.name, func(t *testing.T) {
			g := &Grant{Access: tt.grant}
			if got := g.Allows(tt.op); got != tt.want {
				t.Fatalf("Allows(%q) = %v, want %v", tt.op, got, tt.want)
			}
			if got := g.EffectiveAccess(); got != tt.wantEffective {
				t.Fatalf("EffectiveAccess = %q, want %q", got, tt.wantEffective)
			}
		})
	}

	hash := strings.Repeat("ab", 32)
	binding := []struct {
		name       string
		gop, ghash string
		op, hash   string
		want       error
	}{
		{name: "unbound", op: "create_issue", hash: hash, want: nil},
		{name: "op bound, same op", gop: "create_issue", op: "create_issue", hash: hash, want: nil},
		{name: "op bound, other op", gop: "create_issue", op: "list_repos", want: ErrOpMismatch},
		{name: "args bound, same args", gop: "create_issue", ghash: hash, op: "create_issue", hash: hash, want: nil},
		{name: "args bound, other args", gop: "create_issue", ghash: hash, op: "create_issue", hash: strings.Repeat("cd", 32), want: ErrArgsMismatch},
		{name: "args bound, other op", gop: "create_issue", ghash: hash, op: "get_repo", hash: hash, want: ErrOpMismatch},
	}
	for _, tt := range binding {
		t.Run(tt.name, func(t *testing.T) {
			g := &Grant{Op: tt.gop, ArgsSHA256: tt.ghash}
			if got := g.CheckBinding(tt.op, tt.hash); got != tt.want {
				t.Fatalf("CheckBinding = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSecretRedaction(t *testing.T) {
	g := validGrant()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, g); strings.Contains(out, string(g.Secret)) {
			t.Errorf("Sprintf(%q, grant) shows the secret: %s", verb, out)
		}
	}
}
