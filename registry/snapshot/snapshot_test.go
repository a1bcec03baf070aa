package snapshot

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"aead.dev/minisign"

	"github.com/elevenmessenger/pinned/registry"
)

// devKey is the development key that signs the in-tree snapshot.
func devKey(t testing.TB) (minisign.PublicKey, minisign.PrivateKey) {
	t.Helper()
	text, err := os.ReadFile("testdata/dev.key")
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKey(text)
	if err != nil {
		t.Fatal(err)
	}
	_, _, pubText := registry.EmbeddedSnapshot()
	pub, err := ParsePublicKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	if pub.ID() != priv.ID() {
		t.Fatalf("registry/snapshot.pub (%s) is not the public key of testdata/dev.key (%s)", KeyID(pub), keyID(priv.ID()))
	}
	return pub, priv
}

// TestEmbeddedSnapshot fails when a manifest's bytes differ from the
// signed snapshot the binary embeds (run make snapshot after a change).
func TestEmbeddedSnapshot(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	e, err := LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.Default()
	if e.Digest != reg.Digest() || len(e.Entries) != len(reg.IDs()) {
		t.Fatalf("embedded snapshot %s with %d manifests, registry %s with %d", e.Digest, len(e.Entries), reg.Digest(), len(reg.IDs()))
	}
	for i, id := range reg.IDs() {
		if e.Entries[i].File != id+".json" || !bytes.Equal(e.Entries[i].Content, reg.Raw(id)) {
			t.Errorf("entry %d is %s, want the bytes of %s.json", i, e.Entries[i].File, id)
		}
	}
	pub, _ := devKey(t)
	if e.KeyID != KeyID(pub) {
		t.Errorf("key id %s, want %s", e.KeyID, KeyID(pub))
	}
	// The archive is what Build writes of the same files: canonical.
	archive, _, _ := registry.EmbeddedSnapshot()
	b, err := Build(e.FS(), e.Version)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Marshal(), archive) {
		t.Error("registry/snapshot.json is not the canonical archive of its own files")
	}
}

// TestVerifyDetectsAnyOneByteChange is the property over every embedded
// manifest: changing any one byte of a manifest in a signed snapshot is
// refused by Verify, whether the archive keeps its signature
// (bad_signature), is re-signed by the right key without its digests
// being updated (tampered), or is re-signed by another key
// (bad_signature); and a registry folder with the changed byte is not
// the snapshot (Diff names the file).
func TestVerifyDetectsAnyOneByteChange(t *testing.T) {
	pub, priv := devKey(t)
	archive, sig, _ := registry.EmbeddedSnapshot()
	good, err := Verify(pub, archive, sig)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPriv, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(24, uint64(len(archive))))
	const perManifest = 32
	for i, e := range good.Entries {
		t.Run(e.File, func(t *testing.T) {
			// In the embedded archive, under its signature.
			for _, pos := range []int{0, len(e.Content) - 1, rng.IntN(len(e.Content))} {
				changed := cloneSnapshot(good)
				changed.Entries[i].Content[pos] ^= 0x20
				if _, err := Verify(pub, changed.Marshal(), sig); KindOf(err) != KindBadSignature {
					t.Fatalf("byte %d in the embedded archive: %v, want bad_signature", pos, err)
				}
			}
			// In a snapshot of this manifest alone (cheaper to re-sign).
			one, err := Build(fstest.MapFS{e.File: {Data: e.Content}}, good.Version)
			if err != nil {
				t.Fatal(err)
			}
			oneArchive := one.Marshal()
			oneSig, err := Sign(priv, oneArchive)
			if err != nil {
				t.Fatal(err)
			}
			positions := []int{0, len(e.Content) - 1}
			for len(positions) < perManifest {
				positions = append(positions, rng.IntN(len(e.Content)))
			}
			for _, pos := range positions {
				flip := byte(1 + rng.IntN(255))
				changed := cloneSnapshot(one)
				changed.Entries[0].Content[pos] ^= flip
				bad := changed.Marshal()
				if _, err := Verify(pub, bad, oneSig); KindOf(err) != KindBadSignature {
					t.Fatalf("byte %d ^ %#x under the old signature: %v, want bad_signature", pos, flip, err)
				}
				if _, err := Verify(pub, bad, minisign.Sign(priv, bad)); KindOf(err) != KindTampered {
					t.Fatalf("byte %d ^ %#x re-signed by the right key: %v, want tampered", pos, flip, err)
				}
				if _, err := Verify(pub, bad, minisign.Sign(otherPriv, bad)); KindOf(err) != KindBadSignature {
					t.Fatalf("byte %d ^ %#x signed by another key: %v, want bad_signature", pos, flip, err)
				}
				diff, err := one.Diff(changed.FS())
				if err != nil || len(diff) != 1 || !strings.HasPrefix(diff[0], e.File+": sha256 ") {
					t.Fatalf("byte %d ^ %#x in a folder: diff %q, %v", pos, flip, diff, err)
				}
			}
		})
	}
}

func cloneSnapshot(s *Snapshot) *Snapshot {
	c := &Snapshot{Version: s.Version, Digest: s.Digest}
	for _, e := range s.Entries {
		c.Entries = append(c.Entries, Entry{File: e.File, SHA256: e.SHA256, Content: bytes.Clone(e.Content)})
	}
	return c
}

func TestParseRefuses(t *testing.T) {
	archive, _, _ := registry.EmbeddedSnapshot()
	good, err := Parse(archive)
	if err != nil {
		t.Fatal(err)
	}
	first := good.Entries[0]
	b64 := base64.StdEncoding.EncodeToString(first.Content)
	replace := func(old, new string) []byte {
		if !bytes.Contains(archive, []byte(old)) {
			t.Fatalf("the archive has no %q", old)
		}
		return bytes.Replace(archive, []byte(old), []byte(new), 1)
	}
	// invalid is a consistent snapshot of one manifest the loader refuses.
	bad := bytes.Replace(first.Content, []byte(`"manifest": 1`), []byte(`"manifest": 1, "shell": "rm -rf /"`), 1)
	invalid, _ := Build(fstest.MapFS{first.File: {Data: first.Content}}, 1)
	invalid.Entries[0] = Entry{File: first.File, SHA256: sha(bad), Content: bad}
	invalid.Digest = digestOf(invalid.Entries)
	tests := []struct {
		name string
		data []byte
		kind Kind
	}{
		{name: "not JSON", data: []byte("PK\x03\x04"), kind: KindMalformed},
		{name: "another format", data: replace(Format, "pinned-registry-snapshot/v2"), kind: KindMalformed},
		{name: "an unknown member", data: replace(`"version":`, `"signed_by":"trust me","version":`), kind: KindMalformed},
		{name: "a repeated member", data: replace(`"version":`, `"version":99,"version":`), kind: KindMalformed},
		{name: "extra whitespace", data: replace(`"version":`, `"version": `), kind: KindMalformed},
		{name: "data after the archive", data: append(bytes.Clone(archive), "{}\n"...), kind: KindMalformed},
		{name: "a path in a file name", data: replace(`"file":"`+first.File, `"file":"../`+first.File), kind: KindMalformed},
		{name: "no manifests", data: []byte(`{"format":"` + Format + `","version":1,"digest":"sha256:00","manifests":[]}`), kind: KindMalformed},
		{name: "a wrong per-file sha256", data: replace(first.SHA256, strings.Repeat("0", 64)), kind: KindTampered},
		{name: "a wrong size", data: replace(`"size":`+itoa(len(first.Content)), `"size":`+itoa(len(first.Content)+1)), kind: KindTampered},
		{name: "changed content", data: replace(b64, base64.StdEncoding.EncodeToString(append(bytes.Clone(first.Content), ' '))), kind: KindTampered},
		{name: "a wrong digest of the whole", data: replace(good.Digest, "sha256:"+strings.Repeat("0", 64)), kind: KindTampered},
		{name: "a manifest the loader refuses", data: invalid.Marshal(), kind: KindInvalidManifest},
		{name: "over the size limit", data: bytes.Repeat([]byte(" "), MaxBytes+1), kind: KindMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.data)
			if KindOf(err) != tt.kind {
				t.Fatalf("Parse = %v, %v; want a %s error", s, err, tt.kind)
			}
		})
	}
}

func TestVerifyRefusesSignatures(t *testing.T) {
	pub, priv := devKey(t)
	archive, sig, _ := registry.EmbeddedSnapshot()
	otherPub, otherPriv, _ := minisign.GenerateKey(nil)
	older, _ := Parse(archive)
	older.Version--
	olderArchive := older.Marshal()
	olderSig, err := Sign(priv, olderArchive)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		pub      minisign.PublicKey
		archive  []byte
		sig      []byte
		kind     Kind
		wantVers uint64
	}{
		{name: "the embedded signature", pub: pub, archive: archive, sig: sig, wantVers: older.Version + 1},
		{name: "a legacy (not prehashed) signature", pub: pub, archive: archive, sig: minisign.Sign(priv, archive), wantVers: older.Version + 1},
		{name: "another trusted key", pub: otherPub, archive: archive, sig: sig, kind: KindBadSignature},
		{name: "signed by another key", pub: pub, archive: archive, sig: minisign.Sign(otherPriv, archive), kind: KindBadSignature},
		{name: "the signature of another archive", pub: pub, archive: archive, sig: olderSig, kind: KindBadSignature},
		{name: "no signature", pub: pub, archive: archive, sig: nil, kind: KindBadSignature},
		{name: "a truncated signature", pub: pub, archive: archive, sig: sig[:len(sig)/2], kind: KindBadSignature},
		{name: "a changed trusted comment", pub: pub, archive: archive, sig: bytes.Replace(sig, []byte("version:"), []byte("version:9"), 1), kind: KindBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Verify(tt.pub, tt.archive, tt.sig)
			if KindOf(err) != tt.kind || (tt.kind == "" && err != nil) {
				t.Fatalf("Verify = %v; want kind %q", err, tt.kind)
			}
			if tt.kind == "" && s.Version != tt.wantVers {
				t.Fatalf("version %d, want %d", s.Version, tt.wantVers)
			}
		})
	}
}

func TestSignIsDeterministicAndRefusesABadArchive(t *testing.T) {
	_, priv := devKey(t)
	archive, sig, _ := registry.EmbeddedSnapshot()
	again, err := Sign(priv, archive)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, sig) {
		t.Errorf("signing the embedded archive again gave other bytes:\n%s\nwant (registry/snapshot.json.minisig)\n%s", again, sig)
	}
	if _, err := Sign(priv, bytes.Replace(archive, []byte(`"version":`), []byte(`"version": `), 1)); KindOf(err) != KindMalformed {
		t.Errorf("Sign of a non-canonical archive: %v, want malformed", err)
	}
}

func TestGenerateKeyRoundTrip(t *testing.T) {
	pubText, privText, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKey(privText)
	if err != nil {
		t.Fatal(err)
	}
	archive, _, _ := registry.EmbeddedSnapshot()
	sig, err := Sign(priv, archive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(pub, archive, sig); err != nil {
		t.Fatal(err)
	}
	// The base64 line alone is a key too (minisign -P).
	lines := strings.Split(strings.TrimSpace(string(pubText)), "\n")
	if _, err := ParsePublicKey([]byte(lines[len(lines)-1])); err != nil {
		t.Errorf("the key line alone: %v", err)
	}
	if _, err := ParsePublicKey([]byte("RWQ not a key")); err == nil {
		t.Error("a broken key was accepted")
	}
	if _, err := ParsePrivateKey(pubText); err == nil {
		t.Error("a public key was accepted as a secret key")
	}
}

// FuzzParse holds Parse to its contract on any input: no panic, and what
// it accepts re-marshals to the same bytes.
func FuzzParse(f *testing.F) {
	archive, _, _ := registry.EmbeddedSnapshot()
	f.Add(archive)
	f.Add([]byte(`{"format":"` + Format + `","version":1,"digest":"sha256:","manifests":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if KindOf(err) == "" {
				t.Fatalf("an error without a kind: %v", err)
			}
			return
		}
		if !bytes.Equal(s.Marshal(), data) {
			t.Fatal("an accepted archive is not canonical")
		}
	})
}
