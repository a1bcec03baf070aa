package grant

import (
	"errors"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/secret"
)

func TestRotatedRoundTrip(t *testing.T) {
	member, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := GenerateKey(nil)
	want := Rotated{Service: "github", Kind: KindOAuth, Access: "ghu_fresh", Refresh: "ghr_fresh", TokenExpiresAt: "2026-11-30T18:02:00Z"}
	sealed, err := SealRotated(&want, member.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "ghu_") {
		t.Fatal("the sealed pair shows the token")
	}
	got, err := OpenRotated(sealed, member)
	if err != nil || *got != want {
		t.Fatalf("OpenRotated = %+v, %v", got, err)
	}
	if _, err := OpenRotated(sealed, other); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another key opened it: %v", err)
	}
	// A grant sealed to the member key is not a rotated pair, and the
	// other way round.
	if _, err := Open(sealed, member); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a rotated pair opened as a grant: %v", err)
	}
	unknown := want
	unknown.TokenExpiresAt = ""
	if s, err := SealRotated(&unknown, member.Public(), nil); err != nil {
		t.Fatal(err)
	} else if got, err := OpenRotated(s, member); err != nil || got.TokenExpiresAt != "" {
		t.Fatalf("unknown expiry: %+v %v", got, err)
	}

	bad := []Rotated{
		{Service: "GitHub", Kind: KindOAuth, Access: "a"},
		{Service: "github", Kind: KindPAT, Access: "a"},
		{Service: "github", Kind: KindOAuth},
		{Service: "github", Kind: KindOAuth, Access: "a", TokenExpiresAt: "tomorrow"},
		{Service: "github", Kind: KindOAuth, Access: secret.Secret(strings.Repeat("a", MaxSecretLen+1))},
	}
	for i, r := range bad {
		if _, err := SealRotated(&r, member.Public(), nil); err == nil {
			t.Errorf("case %d: sealed an invalid pair", i)
		}
	}
	if _, err := OpenRotated("not base64!", member); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
}
