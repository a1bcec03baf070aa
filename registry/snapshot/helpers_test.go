package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func digestOf(entries []Entry) string {
	h := sha256.New()
	for _, e := range entries {
		h.Write([]byte(e.File))
		h.Write([]byte{0})
		h.Write(e.Content)
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func itoa(n int) string { return strconv.Itoa(n) }
