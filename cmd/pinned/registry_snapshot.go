package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"aead.dev/minisign"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

const registrySnapshotUsage = `Usage: pinned registry snapshot DIR [-o FILE] [--version N] [--check]

Writes the canonical snapshot archive of the manifests in DIR (every *.json
file directly in it): the files sorted by name, each with its SHA-256,
size and bytes (base64), and the registry digest of the whole, the digest
pinned version and GET /v1/registry name (docs/MANIFEST.md, "Snapshots").
The manifests must pass pinned registry check. The same files give the
same bytes.

--version N sets the snapshot's version. Without it, an existing FILE
keeps its version when the manifests are unchanged and is bumped by one
when they changed; a new FILE starts at 1. A syncing broker refuses a
version lower than the one it holds.

--check writes nothing: it exits 1 when FILE is not exactly what it would
write, naming each manifest that differs (make check runs it on the
embedded registry/snapshot.json).

  pinned registry snapshot registry/manifests -o registry/snapshot.json
  pinned registry sign --key registry.key registry/snapshot.json

Exit status: 0 written (or up to date), 1 a manifest was refused or FILE
is stale, 2 bad usage.

Flags:
`

const registrySignUsage = `Usage: pinned registry sign --key KEYFILE SNAPSHOT [-o SIGFILE]

Signs a snapshot archive with an Ed25519 key in minisign's format and
writes the signature to SIGFILE (default SNAPSHOT.minisig). The key file
is a minisign secret key without a password (pinned registry keygen, or
minisign -G -W); keep it out of every repository, mode 0600. The archive
must be canonical and consistent (pinned registry verify's checks) before
it is signed. minisign -Vm SNAPSHOT -p KEY.pub verifies the result too.

Exit status: 0 signed, 1 the archive or key was refused, 2 bad usage.

Flags:
`

const registryVerifyUsage = `Usage: pinned registry verify --pubkey KEY SNAPSHOT [--sig SIGFILE] [--dir DIR]

Verifies a snapshot archive: the minisign signature (default
SNAPSHOT.minisig) with the trusted public key KEY (a .pub file or its
base64 line), then the archive itself: canonical form, each manifest's
SHA-256 and size, the digest of the whole, and every manifest through the
loader's rules. With --dir it also holds the manifests in DIR to the
snapshot byte for byte, naming each file that differs, is missing or is
extra. On success it prints

  ok: snapshot version 3 sha256:… (16 manifests), signed by key 1A2B…

On failure it names the check that failed (bad_signature, malformed,
tampered, invalid_manifest or mismatch) and exits 1.

Exit status: 0 verified, 1 refused, 2 bad usage.

Flags:
`

const registryKeygenUsage = `Usage: pinned registry keygen --out PREFIX [--force]

Generates an Ed25519 key pair for signing registry snapshots, in
minisign's formats: PREFIX.key, the secret key (unencrypted, mode 0600;
keep it offline and out of every repository), and PREFIX.pub, the public
key a broker is given with --registry-pubkey. Existing files are never
replaced unless --force is given. The public key is also printed.

Exit status: 0 written, 1 the files could not be written, 2 bad usage.

Flags:
`

// runRegistrySnapshot implements pinned registry snapshot.
func runRegistrySnapshot(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry snapshot", flag.ContinueOnError)
	out := fs.String("o", "", "`file` to write the archive to (default stdout)")
	ver := fs.Uint64("version", 0, "the snapshot's version (default: FILE's, bumped when the manifests changed)")
	check := fs.Bool("check", false, "write nothing; exit 1 when FILE is not what would be written")
	words, code, ok := parseFlagsWords(fs, registrySnapshotUsage, args, 1, stdout, stderr)
	if !ok {
		return code
	}
	if len(words) != 1 {
		return flagError(stderr, "registry snapshot", "want one DIR of manifests (for example registry/manifests)")
	}
	if *check && *out == "" {
		return flagError(stderr, "registry snapshot", "--check needs -o FILE, the archive to check")
	}
	dir := words[0]
	if !isDir(dir) {
		return flagError(stderr, "registry snapshot", fmt.Sprintf("%s is not a directory of manifests", dir))
	}
	var old *snapshot.Snapshot
	var oldBytes []byte
	if *out != "" {
		if b, err := os.ReadFile(*out); err == nil {
			oldBytes = b
			old, _ = snapshot.Parse(b)
		}
	}
	version := *ver
	s, err := snapshot.Build(os.DirFS(dir), max(version, 1))
	if err != nil {
		printLoadError(stderr, dir, err)
		return 1
	}
	if version == 0 {
		switch {
		case old == nil:
			version = 1
		case old.Digest == s.Digest:
			version = old.Version
		default:
			version = old.Version + 1
		}
		s.Version = version
	}
	archive := s.Marshal()
	if *check {
		if bytes.Equal(archive, oldBytes) {
			fmt.Fprintf(stdout, "ok: %s is the snapshot of %s (version %d, %s)\n", *out, dir, s.Version, s.Digest)
			return 0
		}
		fmt.Fprintf(stderr, "pinned registry snapshot: %s is stale: it is not the snapshot of %s\n", *out, dir)
		if old != nil {
			diff, _ := old.Diff(os.DirFS(dir))
			for _, d := range diff {
				fmt.Fprintf(stderr, "  %s\n", d)
			}
		}
		fmt.Fprintln(stderr, "pinned registry snapshot: regenerate and sign it: make snapshot")
		return 1
	}
	if *out == "" {
		_, _ = stdout.Write(archive)
		return 0
	}
	if bytes.Equal(archive, oldBytes) {
		fmt.Fprintf(stderr, "pinned registry snapshot: %s is up to date (version %d, %s)\n", *out, s.Version, s.Digest)
		return 0
	}
	if err := writeFileAtomic(*out, archive, 0o644); err != nil {
		fmt.Fprintf(stderr, "pinned registry snapshot: %s\n", errText(err))
		return 1
	}
	fmt.Fprintf(stderr, "pinned registry snapshot: wrote %s: version %d, %d manifests, %s; sign it with pinned registry sign\n", *out, s.Version, len(s.Entries), s.Digest)
	return 0
}

// printLoadError prints a registry's problems one a line, or the error.
func printLoadError(stderr io.Writer, dir string, err error) {
	var re *registry.Error
	if errors.As(err, &re) {
		for _, p := range re.Problems {
			fmt.Fprintf(stderr, "%s\n", filepath.Join(dir, p.String()))
		}
		return
	}
	fmt.Fprintf(stderr, "pinned registry: %s\n", errText(err))
}

// runRegistrySign implements pinned registry sign.
func runRegistrySign(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry sign", flag.ContinueOnError)
	keyFile := fs.String("key", "", "minisign secret key `file` (required)")
	out := fs.String("o", "", "signature `file` (default SNAPSHOT.minisig)")
	words, code, ok := parseFlagsWords(fs, registrySignUsage, args, 1, stdout, stderr)
	if !ok {
		return code
	}
	if *keyFile == "" || len(words) != 1 {
		return flagError(stderr, "registry sign", "want --key KEYFILE and one SNAPSHOT file")
	}
	if *out == "" {
		*out = words[0] + ".minisig"
	}
	keyText, err := os.ReadFile(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry sign: %s\n", errText(err))
		return 1
	}
	if st, err := os.Stat(*keyFile); err == nil && st.Mode().Perm()&0o077 != 0 && !strings.Contains(*keyFile, "testdata") {
		fmt.Fprintf(stderr, "pinned registry sign: warning: %s is readable by others (mode %o); chmod 600 it\n", *keyFile, st.Mode().Perm())
	}
	priv, err := snapshot.ParsePrivateKey(keyText)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry sign: %s: %s\n", *keyFile, err)
		return 1
	}
	archive, err := os.ReadFile(words[0])
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry sign: %s\n", errText(err))
		return 1
	}
	sig, err := snapshot.Sign(priv, archive)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry sign: %s: %s\n", words[0], err)
		return 1
	}
	if err := writeFileAtomic(*out, sig, 0o644); err != nil {
		fmt.Fprintf(stderr, "pinned registry sign: %s\n", errText(err))
		return 1
	}
	fmt.Fprintf(stderr, "pinned registry sign: wrote %s\n", *out)
	return 0
}

// runRegistryVerify implements pinned registry verify.
func runRegistryVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry verify", flag.ContinueOnError)
	pubArg := fs.String("pubkey", "", "trusted public `key`: a minisign .pub file or its base64 line (required)")
	sigFile := fs.String("sig", "", "signature `file` (default SNAPSHOT.minisig)")
	dir := fs.String("dir", "", "also hold the manifests in this `directory` to the snapshot")
	words, code, ok := parseFlagsWords(fs, registryVerifyUsage, args, 1, stdout, stderr)
	if !ok {
		return code
	}
	if *pubArg == "" || len(words) != 1 {
		return flagError(stderr, "registry verify", "want --pubkey KEY and one SNAPSHOT file")
	}
	if *sigFile == "" {
		*sigFile = words[0] + ".minisig"
	}
	pub, err := readPublicKey(*pubArg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry verify: --pubkey: %s\n", errText(err))
		return 2
	}
	archive, err := os.ReadFile(words[0])
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry verify: %s\n", errText(err))
		return 1
	}
	sig, err := os.ReadFile(*sigFile)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry verify: %s (sign the snapshot with pinned registry sign, or give --sig)\n", errText(err))
		return 1
	}
	s, err := snapshot.Verify(pub, archive, sig)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry verify: %s: %s\n", words[0], err)
		return 1
	}
	if *dir != "" {
		diff, err := s.Diff(os.DirFS(*dir))
		if err != nil {
			fmt.Fprintf(stderr, "pinned registry verify: --dir: %s\n", errText(err))
			return 1
		}
		if len(diff) > 0 {
			fmt.Fprintf(stderr, "pinned registry verify: %s: mismatch: the manifests in %s are not the signed snapshot:\n", words[0], *dir)
			for _, d := range diff {
				fmt.Fprintf(stderr, "  %s\n", d)
			}
			return 1
		}
	}
	fmt.Fprintf(stdout, "ok: snapshot version %d %s (%d manifests), signed by key %s\n", s.Version, s.Digest, len(s.Entries), snapshot.KeyID(pub))
	return 0
}

// readPublicKey reads a minisign public key from a file, or takes the
// argument as the base64 key itself.
func readPublicKey(arg string) (minisign.PublicKey, error) {
	text, rerr := os.ReadFile(arg)
	if rerr != nil {
		if pub, err := snapshot.ParsePublicKey([]byte(arg)); err == nil {
			return pub, nil
		}
		return minisign.PublicKey{}, rerr
	}
	return snapshot.ParsePublicKey(text)
}

// runRegistryKeygen implements pinned registry keygen.
func runRegistryKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry keygen", flag.ContinueOnError)
	out := fs.String("out", "", "`prefix` of the key files: PREFIX.key and PREFIX.pub (required)")
	force := fs.Bool("force", false, "replace existing key files")
	if code, ok := parseFlags(fs, registryKeygenUsage, args, stdout, stderr); !ok {
		return code
	}
	if *out == "" {
		return flagError(stderr, "registry keygen", "--out PREFIX is required (writes PREFIX.key and PREFIX.pub)")
	}
	pub, priv, err := snapshot.GenerateKey(nil)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry keygen: %s\n", errText(err))
		return 1
	}
	keyPath, pubPath := *out+".key", *out+".pub"
	if !*force {
		for _, p := range []string{keyPath, pubPath} {
			if _, err := os.Stat(p); err == nil {
				fmt.Fprintf(stderr, "pinned registry keygen: %s exists; choose another --out, or add --force to replace it\n", p)
				return 1
			}
		}
	}
	if err := writeFileAtomic(keyPath, priv, 0o600); err != nil {
		fmt.Fprintf(stderr, "pinned registry keygen: %s\n", errText(err))
		return 1
	}
	if err := writeFileAtomic(pubPath, pub, 0o644); err != nil {
		fmt.Fprintf(stderr, "pinned registry keygen: %s\n", errText(err))
		return 1
	}
	fmt.Fprintf(stderr, "pinned registry keygen: wrote %s (mode 0600, keep it offline) and %s\n", keyPath, pubPath)
	_, _ = stdout.Write(pub)
	return 0
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
