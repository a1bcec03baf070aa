package fakeapi

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: Close
// must stop the server and every connection.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
