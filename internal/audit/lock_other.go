//go:build !unix

package audit

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir's .lock file; off Unix it takes no lock, and one
// process per replica name is the operator's to ensure.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return f, nil
}
